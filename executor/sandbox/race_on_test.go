//go:build race

package sandbox

// raceGrowth scales what a test lets a process grow by: the race
// detector shadows every allocation and keeps its shadow.
const raceGrowth = 6
