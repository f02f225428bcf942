// Command pbvectors prints the protobuf encoding Go's protobuf library (google.golang.org/protobuf)
// gives values, as test vectors for frpc's own protobuf encoder:
//
//	pbvectors DESCRIPTOR_SET < cases
//
// DESCRIPTOR_SET is a binary google.protobuf.FileDescriptorSet (imports included); each line of
// stdin is a JSON object {"message": "<full message name>", "json": <the value in protojson>}.
// For each line it prints the value's encoding (deterministic: map entries sorted) in hex.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

type testCase struct {
	Message string          `json:"message"`
	JSON    json.RawMessage `json:"json"`
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: pbvectors DESCRIPTOR_SET < cases")
	}
	data, err := os.ReadFile(os.Args[1])
	check(err)
	var set descriptorpb.FileDescriptorSet
	check(proto.Unmarshal(data, &set))
	files, err := protodesc.NewFiles(&set)
	check(err)
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 1<<20), 1<<24)
	for lines.Scan() {
		var c testCase
		check(json.Unmarshal(lines.Bytes(), &c))
		found, err := files.FindDescriptorByName(protoreflect.FullName(c.Message))
		check(err)
		descriptor, ok := found.(protoreflect.MessageDescriptor)
		if !ok {
			fail(c.Message + " is not a message")
		}
		message := dynamicpb.NewMessage(descriptor)
		check(protojson.Unmarshal(c.JSON, message))
		encoded, err := proto.MarshalOptions{Deterministic: true}.Marshal(message)
		check(err)
		fmt.Println(hex.EncodeToString(encoded))
	}
	check(lines.Err())
}

func check(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "pbvectors:", message)
	os.Exit(1)
}
