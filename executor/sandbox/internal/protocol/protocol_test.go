package protocol

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

// TestRecord: a run request's record holds its fields at their positions
// and each rlimit's resource and value after them, unlimited as the
// unsigned 64-bit value setrlimit takes, in little-endian words.
func TestRecord(t *testing.T) {
	words := func(b []byte) []uint64 {
		if len(b)%8 != 0 {
			t.Fatalf("a record of %d bytes", len(b))
		}
		var w []uint64
		for ; len(b) > 0; b = b[8:] {
			w = append(w, binary.LittleEndian.Uint64(b))
		}
		return w
	}
	bare := ForkRun{Slot: -1, WorkBytes: 64 << 20, Memory: 256 << 20}
	if got, want := words(bare.Record(5)), []uint64{math.MaxUint64, 64 << 20, 256 << 20, 0, 5}; !slices.Equal(got, want) {
		t.Errorf("%+v: record %v, want %v", bare, got, want)
	}
	full := ForkRun{Slot: 3, WorkBytes: 1, Memory: 2, Rehearse: true, Rlimits: []ForkRlimit{{Resource: 7, Value: 256}, {Resource: 4, Value: math.MaxUint64}}}
	got := words(full.Record(9))
	if want := []uint64{3, 1, 2, 1, 9, 7, 256, 4, math.MaxUint64}; !slices.Equal(got, want) {
		t.Errorf("%+v: record %v, want %v", full, got, want)
	}
	if got[RecordSlot] != 3 || got[RecordWorkBytes] != 1 || got[RecordMemory] != 2 || got[RecordRehearse] != 1 || got[RecordInit] != 9 || got[RecordRlimits] != 7 {
		t.Errorf("%+v: fields not at their positions: %v", full, got)
	}
}
