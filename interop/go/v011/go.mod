module frpcinterop/v011

go 1.22

require (
	frpcinterop/peer v0.0.0
	github.com/loopholelabs/frisbee-go v0.11.0
)

require (
	github.com/loopholelabs/common v0.4.10 // indirect
	github.com/loopholelabs/logging v0.3.1 // indirect
	github.com/loopholelabs/polyglot/v2 v2.0.3 // indirect
)

replace frpcinterop/peer => ../peer
