//go:build linux && !amd64

package stage

// threadPointer is not known here without assembly: the maker then keeps
// all its memory (see makerUnmaps).
//
//go:nosplit
func threadPointer() (uintptr, bool) { return 0, false }
