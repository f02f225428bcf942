// The interop peer built against frisbee-go v0.11.0: 10-byte header with magic, 5 MiB limit
// (frisbee.DefaultMaxContentLength, left at its default).
package main

import (
	"frpcinterop/peer"

	"github.com/loopholelabs/frisbee-go"
)

func main() {
	peer.Main(peer.Config{
		Name:        "v0.11.0",
		ErrTooLarge: frisbee.ContentLengthExceeded,
	})
}
