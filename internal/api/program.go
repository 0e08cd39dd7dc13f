package api

import (
	"fmt"
	"strings"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
)

// pythonArgs parses a python command line (without the executable) into a
// program: -c CODE, -m MODULE or FILE, then the script's arguments. Options
// that change nothing here (-u, -B, -E, -s, -S, -I, -q, -O, -W x, -X x) are
// accepted and ignored.
func pythonArgs(args []string) (wire.Program, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "-m":
			if i+1 >= len(args) {
				return wire.Program{}, fmt.Errorf("python option %s needs an argument", a)
			}
			mode := executor.LaunchCode
			if a == "-m" {
				mode = executor.LaunchModule
			}
			return wire.Program{Launch: mode, Code: args[i+1], Args: args[i+2:]}, nil
		case a == "-W" || a == "-X":
			i++
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			return wire.Program{Launch: executor.LaunchCode, Code: a[2:], Args: args[i+1:]}, nil
		case strings.HasPrefix(a, "-m") && len(a) > 2:
			return wire.Program{Launch: executor.LaunchModule, Code: a[2:], Args: args[i+1:]}, nil
		case strings.HasPrefix(a, "-W") || strings.HasPrefix(a, "-X"):
		case a == "-" || a == "--":
			return wire.Program{}, fmt.Errorf("python reading its program from stdin is not supported: use -c CODE or a file")
		case strings.HasPrefix(a, "-"):
			if strings.Trim(a[1:], "uBEsSIqOb") != "" {
				return wire.Program{}, fmt.Errorf("python option %s is not supported", a)
			}
		default:
			return wire.Program{Launch: executor.LaunchFile, Code: a, Args: args[i+1:]}, nil
		}
	}
	return wire.Program{}, fmt.Errorf("args name no program: give [\"-c\", CODE], [\"-m\", MODULE, ...] or a file name")
}
