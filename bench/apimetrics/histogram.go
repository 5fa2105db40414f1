/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package apimetrics

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Bucket is one cumulative bucket of a Prometheus histogram: how many
// observations were at most LE (+Inf for the last).
type Bucket struct {
	LE    float64 `json:"le"`
	Count float64 `json:"count"`
}

// Buckets reads metric's histogram (its <metric>_bucket series) from a
// Prometheus text exposition, adding up the series whose labels include
// every pair of match, sorted by LE. It is empty when no series matches.
func Buckets(data []byte, metric string, match map[string]string) ([]Bucket, error) {
	byLE := map[float64]float64{}
	prefix := []byte(metric + "_bucket{")
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		labels, v, err := parseSeries(string(line[len(prefix):]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		if !matches(labels, match) {
			continue
		}
		le, err := strconv.ParseFloat(labels["le"], 64) // ParseFloat reads "+Inf"
		if err != nil {
			return nil, fmt.Errorf("%s: le: %w", line, err)
		}
		byLE[le] += v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]Bucket, 0, len(byLE))
	for le, n := range byLE {
		out = append(out, Bucket{LE: le, Count: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LE < out[j].LE })
	return out, nil
}

func matches(labels, match map[string]string) bool {
	for k, want := range match {
		if labels[k] != want {
			return false
		}
	}
	return true
}

// SubBuckets returns the observations made between before and after, two
// readings of one histogram.
func SubBuckets(after, before []Bucket) []Bucket {
	was := map[float64]float64{}
	for _, b := range before {
		was[b.LE] = b.Count
	}
	out := make([]Bucket, len(after))
	for i, b := range after {
		out[i] = Bucket{LE: b.LE, Count: b.Count - was[b.LE]}
	}
	return out
}

// Quantile estimates the q-th quantile (0..1) of a histogram's
// observations as Prometheus's histogram_quantile does: it finds the
// bucket that holds the rank and interpolates linearly between that
// bucket's bounds (0 for the first), which assumes the observations are
// spread evenly inside it. A rank in the +Inf bucket answers the highest
// finite bound. NaN when there is no observation.
func Quantile(buckets []Bucket, q float64) float64 {
	if len(buckets) == 0 || buckets[len(buckets)-1].Count <= 0 {
		return math.NaN()
	}
	rank := q * buckets[len(buckets)-1].Count
	lower, below := 0.0, 0.0
	for _, b := range buckets {
		if b.Count >= rank && b.Count > below {
			if math.IsInf(b.LE, 1) {
				return lower
			}
			return lower + (b.LE-lower)*(rank-below)/(b.Count-below)
		}
		lower, below = b.LE, b.Count
	}
	return lower
}
