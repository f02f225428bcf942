// Hand-written fRPC messages for capture.proto (/work/shared/vectors/capture.proto), laid out
// exactly as frpc-go's generator would: an envelope of Nil, Error or `08 <flags>` followed by
// the fields in three groups (plain values, repeated fields, then messages and maps), each group
// in .proto declaration order. Enums travel as their declaration index (uint32).

package peer

import (
	"errors"

	"github.com/loopholelabs/polyglot/v2"
)

// ErrDecodeNil is returned when decoding into a nil message.
var ErrDecodeNil = errors.New("cannot decode into a nil root struct")

// Message is implemented by every message type.
type Message interface {
	Encode(b *polyglot.Buffer)
	Decode(b []byte) error
	// Err is the error carried by the message (the envelope was a polyglot Error), or nil.
	Err() error
}

// Request.Corpus values (declaration order).
const (
	RequestUNIVERSAL = uint32(iota)
	RequestWEB
	RequestIMAGES
	RequestLOCAL
	RequestNEWS
	RequestPRODUCTS
	RequestVIDEO
)

// Test enum values (declaration order).
const (
	TestPotato = uint32(iota)
	TestMonkey
)

// envelope holds fRPC's two hidden fields of every message.
type envelope struct {
	err   error
	flags uint8
}

func (e *envelope) Err() error { return e.err }

// begin writes the envelope prefix and reports whether the fields follow.
func (e *envelope) begin(enc *polyglot.BufferEncoder) bool {
	if e.err != nil {
		enc.Error(e.err)
		return false
	}
	enc.Uint8(e.flags)
	return true
}

// open reads the envelope prefix of a present (non-Nil) message and reports whether its fields
// follow (false: it carried an error, which is now stored).
func (e *envelope) open(d *polyglot.BufferDecoder) (bool, error) {
	var err error
	e.err, err = d.Error()
	if err == nil {
		return false, nil
	}
	e.err = nil
	e.flags, err = d.Uint8()
	if err != nil {
		return false, err
	}
	return true, nil
}

// WithError returns a message whose envelope is the error err (used for EOF and handler errors).
func WithError(err error) Message {
	return &Data{envelope: envelope{err: err}}
}

// ---------------------------------------------------------------------------------------------

// Request is capture.Request.
type Request struct {
	envelope
	Message string
	Corpus  uint32
}

func (x *Request) Encode(b *polyglot.Buffer) {
	e := polyglot.Encoder(b)
	if x == nil {
		e.Nil()
		return
	}
	if !x.begin(e) {
		return
	}
	e.String(x.Message).Uint32(x.Corpus)
}

func (x *Request) Decode(b []byte) error {
	if x == nil {
		return ErrDecodeNil
	}
	d := polyglot.Decoder(b)
	if d.Nil() {
		return nil
	}
	return x.decode(d)
}

func (x *Request) decode(d *polyglot.BufferDecoder) error {
	ok, err := x.open(d)
	if !ok || err != nil {
		return err
	}
	if x.Message, err = d.String(); err != nil {
		return err
	}
	x.Corpus, err = d.Uint32()
	return err
}

// Data is capture.Data.
type Data struct {
	envelope
	Message string
	Checker uint32
}

func (x *Data) Encode(b *polyglot.Buffer) {
	e := polyglot.Encoder(b)
	if x == nil {
		e.Nil()
		return
	}
	if !x.begin(e) {
		return
	}
	e.String(x.Message).Uint32(x.Checker)
}

func (x *Data) Decode(b []byte) error {
	if x == nil {
		return ErrDecodeNil
	}
	d := polyglot.Decoder(b)
	if d.Nil() {
		return nil
	}
	return x.decode(d)
}

func (x *Data) decode(d *polyglot.BufferDecoder) error {
	ok, err := x.open(d)
	if !ok || err != nil {
		return err
	}
	if x.Message, err = d.String(); err != nil {
		return err
	}
	x.Checker, err = d.Uint32()
	return err
}

// Response is capture.Response.
type Response struct {
	envelope
	Message string
	Test    *Data
}

func (x *Response) Encode(b *polyglot.Buffer) {
	e := polyglot.Encoder(b)
	if x == nil {
		e.Nil()
		return
	}
	if !x.begin(e) {
		return
	}
	e.String(x.Message)
	x.Test.Encode(b)
}

func (x *Response) Decode(b []byte) error {
	if x == nil {
		return ErrDecodeNil
	}
	d := polyglot.Decoder(b)
	if d.Nil() {
		return nil
	}
	return x.decode(d)
}

func (x *Response) decode(d *polyglot.BufferDecoder) error {
	ok, err := x.open(d)
	if !ok || err != nil {
		return err
	}
	if x.Message, err = d.String(); err != nil {
		return err
	}
	x.Test = nil
	if !d.Nil() {
		x.Test = &Data{}
		if err = x.Test.decode(d); err != nil {
			return err
		}
	}
	return nil
}

// SearchResponseResult is capture.SearchResponse.Result.
type SearchResponseResult struct {
	envelope
	Url      string
	Title    string
	Snippets []string
}

func (x *SearchResponseResult) Encode(b *polyglot.Buffer) {
	e := polyglot.Encoder(b)
	if x == nil {
		e.Nil()
		return
	}
	if !x.begin(e) {
		return
	}
	e.String(x.Url).String(x.Title)
	encodeStrings(e, x.Snippets)
}

func (x *SearchResponseResult) Decode(b []byte) error {
	if x == nil {
		return ErrDecodeNil
	}
	d := polyglot.Decoder(b)
	if d.Nil() {
		return nil
	}
	return x.decode(d)
}

func (x *SearchResponseResult) decode(d *polyglot.BufferDecoder) error {
	ok, err := x.open(d)
	if !ok || err != nil {
		return err
	}
	if x.Url, err = d.String(); err != nil {
		return err
	}
	if x.Title, err = d.String(); err != nil {
		return err
	}
	x.Snippets, err = decodeStrings(d)
	return err
}

// SearchResponse is capture.SearchResponse.
type SearchResponse struct {
	envelope
	Results   []*SearchResponseResult
	Results2  []*SearchResponseResult
	Snippets  []string
	Snippets2 []string
}

func (x *SearchResponse) Encode(b *polyglot.Buffer) {
	e := polyglot.Encoder(b)
	if x == nil {
		e.Nil()
		return
	}
	if !x.begin(e) {
		return
	}
	encodeResults(b, x.Results)
	encodeResults(b, x.Results2)
	encodeStrings(e, x.Snippets)
	encodeStrings(e, x.Snippets2)
}

func (x *SearchResponse) Decode(b []byte) error {
	if x == nil {
		return ErrDecodeNil
	}
	d := polyglot.Decoder(b)
	if d.Nil() {
		return nil
	}
	return x.decode(d)
}

func (x *SearchResponse) decode(d *polyglot.BufferDecoder) error {
	ok, err := x.open(d)
	if !ok || err != nil {
		return err
	}
	if x.Results, err = decodeResults(d); err != nil {
		return err
	}
	if x.Results2, err = decodeResults(d); err != nil {
		return err
	}
	if x.Snippets, err = decodeStrings(d); err != nil {
		return err
	}
	x.Snippets2, err = decodeStrings(d)
	return err
}

// StockPrices is capture.StockPrices.
type StockPrices struct {
	envelope
	Prices map[string]float64
}

func (x *StockPrices) Encode(b *polyglot.Buffer) {
	e := polyglot.Encoder(b)
	if x == nil {
		e.Nil()
		return
	}
	if !x.begin(e) {
		return
	}
	e.Map(uint32(len(x.Prices)), polyglot.StringKind, polyglot.Float64Kind)
	for k, v := range x.Prices {
		e.String(k).Float64(v)
	}
}

func (x *StockPrices) Decode(b []byte) error {
	if x == nil {
		return ErrDecodeNil
	}
	d := polyglot.Decoder(b)
	if d.Nil() {
		return nil
	}
	return x.decode(d)
}

func (x *StockPrices) decode(d *polyglot.BufferDecoder) error {
	ok, err := x.open(d)
	if !ok || err != nil {
		return err
	}
	x.Prices = nil
	if d.Nil() {
		return nil
	}
	size, err := d.Map(polyglot.StringKind, polyglot.Float64Kind)
	if err != nil {
		return err
	}
	x.Prices = make(map[string]float64, size)
	for i := uint32(0); i < size; i++ {
		k, err := d.String()
		if err != nil {
			return err
		}
		if x.Prices[k], err = d.Float64(); err != nil {
			return err
		}
	}
	return nil
}

// StockPricesWrapper is capture.StockPricesWrapper.
type StockPricesWrapper struct {
	envelope
	SPrices []*StockPrices
}

func (x *StockPricesWrapper) Encode(b *polyglot.Buffer) {
	e := polyglot.Encoder(b)
	if x == nil {
		e.Nil()
		return
	}
	if !x.begin(e) {
		return
	}
	e.Slice(uint32(len(x.SPrices)), polyglot.AnyKind)
	for _, v := range x.SPrices {
		v.Encode(b)
	}
}

func (x *StockPricesWrapper) Decode(b []byte) error {
	if x == nil {
		return ErrDecodeNil
	}
	d := polyglot.Decoder(b)
	if d.Nil() {
		return nil
	}
	return x.decode(d)
}

func (x *StockPricesWrapper) decode(d *polyglot.BufferDecoder) error {
	ok, err := x.open(d)
	if !ok || err != nil {
		return err
	}
	size, err := d.Slice(polyglot.AnyKind)
	if err != nil {
		return err
	}
	x.SPrices = make([]*StockPrices, size)
	for i := range x.SPrices {
		x.SPrices[i] = &StockPrices{}
		if d.Nil() {
			continue
		}
		if err = x.SPrices[i].decode(d); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------

func encodeStrings(e *polyglot.BufferEncoder, values []string) {
	e.Slice(uint32(len(values)), polyglot.StringKind)
	for _, v := range values {
		e.String(v)
	}
}

func decodeStrings(d *polyglot.BufferDecoder) ([]string, error) {
	size, err := d.Slice(polyglot.StringKind)
	if err != nil {
		return nil, err
	}
	values := make([]string, size)
	for i := range values {
		if values[i], err = d.String(); err != nil {
			return nil, err
		}
	}
	return values, nil
}

func encodeResults(b *polyglot.Buffer, values []*SearchResponseResult) {
	polyglot.Encoder(b).Slice(uint32(len(values)), polyglot.AnyKind)
	for _, v := range values {
		v.Encode(b)
	}
}

func decodeResults(d *polyglot.BufferDecoder) ([]*SearchResponseResult, error) {
	size, err := d.Slice(polyglot.AnyKind)
	if err != nil {
		return nil, err
	}
	values := make([]*SearchResponseResult, size)
	for i := range values {
		values[i] = &SearchResponseResult{}
		if d.Nil() {
			continue
		}
		if err = values[i].decode(d); err != nil {
			return nil, err
		}
	}
	return values, nil
}
