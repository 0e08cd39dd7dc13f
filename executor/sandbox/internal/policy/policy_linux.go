package policy

import "golang.org/x/sys/unix"

// schedulingRlimits: the snippet may not lower its nice value below
// SnippetNice, nor take a real-time policy (SCHED_FIFO, SCHED_RR).
var schedulingRlimits = []RlimitRule{
	{"NICE", unix.RLIMIT_NICE, func(Limits) uint64 { return 0 }},
	{"RTPRIO", unix.RLIMIT_RTPRIO, func(Limits) uint64 { return 0 }},
}
