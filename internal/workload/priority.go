package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/des"
)

// PriorityClass is one class of a workload's priority mix
// (workload.priorities): requests of the class get Priority, and a class
// takes a share of the entries proportional to its Weight.
type PriorityClass struct {
	// Priority is vLLM's request priority: under the engine's priority
	// scheduling policy a smaller value is served first.
	Priority int32 `yaml:"priority" json:"priority"`
	// Weight is the class's relative frequency (>= 0, finite; the
	// weights have a positive sum).
	Weight float64 `yaml:"weight" json:"weight"`
}

// MaxPriorityClasses bounds the number of classes in a priority mix.
const MaxPriorityClasses = 64

// ValidatePriorities checks a priority mix; path names its field (e.g.
// workload.priorities). Every problem is returned, joined, each with its
// field path.
func ValidatePriorities(classes []PriorityClass, path string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch {
	case len(classes) == 0:
		bad(path, "lists no class; give at least one {priority: P, weight: W} or remove it")
	case len(classes) > MaxPriorityClasses:
		bad(path, "has %d classes, more than %d", len(classes), MaxPriorityClasses)
	}
	sum := 0.0
	seen := map[int32]int{}
	for i, c := range classes {
		p := fmt.Sprintf("%s[%d]", path, i)
		if j, dup := seen[c.Priority]; dup {
			bad(p+".priority", "%d is also the priority of class %d; merge their weights", c.Priority, j)
		}
		seen[c.Priority] = i
		if !(c.Weight >= 0) || math.IsInf(c.Weight, 0) {
			bad(p+".weight", "must be >= 0 and finite (got %v)", c.Weight)
			continue
		}
		sum += c.Weight
	}
	if len(classes) > 0 && len(errs) == 0 && (!(sum > 0) || math.IsInf(sum, 0)) {
		bad(path, "weights must have a positive, finite sum (got %v)", sum)
	}
	return errors.Join(errs...)
}

// WithPriorities returns a Source that gives every entry of src a
// priority drawn from the mix classes (validated by ValidatePriorities)
// with the seeded stream "priorities": a session's sub-requests all get
// its entry's priority, and the draw replaces any priority src gave. The
// entry's requests are changed in place (they belong to the caller by
// the Source contract).
func WithPriorities(src Source, classes []PriorityClass, seed uint64) Source {
	cum := make([]float64, len(classes))
	sum := 0.0
	for i, c := range classes {
		sum += c.Weight
		cum[i] = sum
	}
	return &prioritized{src: src, classes: classes, cum: cum, rng: des.Stream(seed, "priorities")}
}

type prioritized struct {
	src     Source
	classes []PriorityClass
	cum     []float64 // cumulative weights
	rng     *rand.Rand
}

// Next implements Source.
func (p *prioritized) Next() (Entry, error) {
	e, err := p.src.Next()
	if err != nil {
		return e, err
	}
	u := p.rng.Float64() * p.cum[len(p.cum)-1]
	k := 0
	for k < len(p.cum)-1 && !(u < p.cum[k]) {
		k++
	}
	for i := range e.Requests {
		e.Requests[i].Priority = p.classes[k].Priority
	}
	return e, nil
}

// Release implements Releaser for a wrapped Releaser.
func (p *prioritized) Release(e Entry) { Release(p.src, e) }

// Remaining implements Counter for a wrapped Counter (priorities change
// no count).
func (p *prioritized) Remaining() (int64, bool) { return Remaining(p.src) }
