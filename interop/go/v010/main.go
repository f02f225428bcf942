// The interop peer built against frisbee-go v0.10.2: legacy 8-byte header, no size limit.
package main

import "frpcinterop/peer"

func main() {
	peer.Main(peer.Config{Name: "v0.10.2"})
}
