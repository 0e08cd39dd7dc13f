//go:build !linux

package stage

// Main: without Linux no sandbox stage re-executes the binary (see the
// Linux Main).
func Main() {}
