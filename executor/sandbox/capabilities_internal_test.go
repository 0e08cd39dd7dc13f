package sandbox

import (
	"strings"
	"testing"
)

func TestMissingCapabilities(t *testing.T) {
	status := func(capEff string) []byte {
		return []byte("Name:\trunblock\nUid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapPrm:\t" + capEff + "\nCapEff:\t" + capEff + "\nCapBnd:\t" + capEff + "\n")
	}
	for _, tc := range []struct {
		name    string
		status  []byte
		euid    int
		missing []string // capability names the hint must name, nil: no hint
		present []string // names it must not
	}{
		// Compose's and the Deployment's executor as shipped before: only
		// SETUID and SETGID (bits 6, 7).
		{"setuid and setgid only", status("00000000000000c0"), 0,
			[]string{"CAP_SETFCAP", "CAP_CHOWN", "CAP_DAC_OVERRIDE"}, []string{"CAP_SETUID", "CAP_SETGID"}},
		{"namespace tiers only", status("00000000800000c0"), 0,
			[]string{"CAP_CHOWN", "CAP_DAC_OVERRIDE"}, []string{"CAP_SETFCAP"}},
		{"what the manifests add", status("00000000800000c3"), 0, nil, nil},
		{"root with every capability", status("000001ffffffffff"), 0, nil, nil},
		{"no capability at all", status("0000000000000000"), 0,
			[]string{"CAP_SETUID", "CAP_SETGID", "CAP_SETFCAP", "CAP_CHOWN", "CAP_DAC_OVERRIDE"}, nil},
		{"not root: capabilities are not the cause", status("0000000000000000"), 10001, nil, nil},
		{"no CapEff line", []byte("Name:\trunblock\n"), 0, nil, nil},
		{"unreadable CapEff", status("zz"), 0, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hint := missingCapabilities(tc.status, tc.euid)
			if tc.missing == nil {
				if hint != "" {
					t.Fatalf("hint %q, want none", hint)
				}
				return
			}
			for _, name := range tc.missing {
				if !strings.Contains(hint, name+" ") {
					t.Errorf("hint %q does not name %s", hint, name)
				}
			}
			for _, name := range tc.present {
				if strings.Contains(hint, name+" ") {
					t.Errorf("hint %q names %s, which the service has", hint, name)
				}
			}
		})
	}
}
