//go:build !linux

package policy

// schedulingRlimits: other systems have no rlimit of the scheduler.
var schedulingRlimits []RlimitRule
