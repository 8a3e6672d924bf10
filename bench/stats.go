//go:build linux

package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// sample is a set of measurements of one quantity, in the unit of its
// kind (nanoseconds for durations, bytes for sizes, plain counts).
type sample struct {
	v      []float64
	sorted bool
}

func (s *sample) add(x float64)          { s.v = append(s.v, x); s.sorted = false }
func (s *sample) addDur(d time.Duration) { s.add(float64(d)) }
func (s *sample) n() int                 { return len(s.v) }

func (s *sample) sort() {
	if !s.sorted {
		sort.Float64s(s.v)
		s.sorted = true
	}
}

// quantile is the nearest-rank quantile (q in (0,1]); the median of an
// even count is the mean of the two middle values.
func (s *sample) quantile(q float64) float64 {
	if len(s.v) == 0 {
		return math.NaN()
	}
	s.sort()
	if q == 0.5 {
		n := len(s.v)
		if n%2 == 1 {
			return s.v[n/2]
		}
		return (s.v[n/2-1] + s.v[n/2]) / 2
	}
	i := int(math.Ceil(q*float64(len(s.v)))) - 1
	i = max(0, min(i, len(s.v)-1))
	return s.v[i]
}

func (s *sample) median() float64 { return s.quantile(0.5) }
func (s *sample) p99() float64    { return s.quantile(0.99) }
func (s *sample) min() float64 {
	if len(s.v) == 0 {
		return math.NaN()
	}
	s.sort()
	return s.v[0]
}

// unit says how a value prints.
type unit int

const (
	uDur   unit = iota // nanoseconds
	uBytes             // bytes
	uCount             // plain number
	uPct               // percent
)

func fmtVal(u unit, x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	switch u {
	case uDur:
		return fmtDur(x)
	case uBytes:
		return fmtBytes(x)
	case uPct:
		return fmt.Sprintf("%.2f%%", x)
	default:
		if x == math.Trunc(x) {
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprintf("%.1f", x)
	}
}

// fmtDur prints nanoseconds with 3-4 significant digits: 85.3µs, 12.34ms.
func fmtDur(ns float64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "−", -ns
	}
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%s%.0fns", sign, ns)
	case ns < 1e4:
		return fmt.Sprintf("%s%.2fµs", sign, ns/1e3)
	case ns < 1e6:
		return fmt.Sprintf("%s%.1fµs", sign, ns/1e3)
	case ns < 1e7:
		return fmt.Sprintf("%s%.3fms", sign, ns/1e6)
	case ns < 1e9:
		return fmt.Sprintf("%s%.1fms", sign, ns/1e6)
	default:
		return fmt.Sprintf("%s%.3fs", sign, ns/1e9)
	}
}

func fmtBytes(b float64) string {
	sign := ""
	if b < 0 {
		sign, b = "−", -b
	}
	switch {
	case b >= 1e6:
		return fmt.Sprintf("%s%.1f MB", sign, b/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%s%.1f kB", sign, b/1e3)
	default:
		return fmt.Sprintf("%s%.0f B", sign, b)
	}
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
