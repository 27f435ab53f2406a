//go:build race

package links

// raceEnabled is true under -race, where allocation counts are not
// meaningful.
const raceEnabled = true
