/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package apimetrics reads the API server's own count of the requests it
// served (apiserver_request_total), so that the benchmark counts writes as
// the server saw them, not as a client believes it sent them.
package apimetrics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Metric is the counter read.
const Metric = "apiserver_request_total"

// Key is one series of apiserver_request_total, with the labels the
// benchmark uses.
type Key struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Code        string `json:"code"`
}

// Snapshot is apiserver_request_total at one moment.
type Snapshot map[Key]float64

// Scrape reads /metrics through an admin REST client.
func Scrape(ctx context.Context, c rest.Interface) (Snapshot, error) {
	data, err := c.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	return Parse(data)
}

// EtcdMetric counts the API server's requests to etcd; its series are kept
// with Verb "etcd:<operation>".
const EtcdMetric = "etcd_requests_total"

// Parse reads the apiserver_request_total and etcd_requests_total series
// of a Prometheus text exposition. Series that differ only in labels Key
// does not keep are added up.
func Parse(data []byte) (Snapshot, error) {
	s := Snapshot{}
	prefix, etcdPrefix := []byte(Metric+"{"), []byte(EtcdMetric+"{")
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		etcd := bytes.HasPrefix(line, etcdPrefix)
		if !etcd && !bytes.HasPrefix(line, prefix) {
			continue
		}
		rest := line[len(prefix):]
		if etcd {
			rest = line[len(etcdPrefix):]
		}
		labels, value, err := parseSeries(string(rest))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		k := Key{Verb: labels["verb"], Group: labels["group"], Resource: labels["resource"], Subresource: labels["subresource"], Code: labels["code"]}
		if etcd {
			k = Key{Verb: "etcd:" + labels["operation"], Group: labels["group"], Resource: labels["resource"]}
		}
		s[k] += value
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseSeries parses `a="x",b="y"} 12` (the part after the opening brace).
func parseSeries(rest string) (map[string]string, float64, error) {
	labels := map[string]string{}
	for {
		rest = strings.TrimLeft(rest, ", ")
		if strings.HasPrefix(rest, "}") {
			rest = rest[1:]
			break
		}
		eq := strings.IndexByte(rest, '=')
		if eq < 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
			return nil, 0, fmt.Errorf("malformed labels")
		}
		name := rest[:eq]
		// Find the closing quote, skipping escaped characters.
		i := eq + 2
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' {
				i++
			}
		}
		if i >= len(rest) {
			return nil, 0, fmt.Errorf("unterminated label value")
		}
		value, err := strconv.Unquote(rest[eq+1 : i+1])
		if err != nil {
			return nil, 0, fmt.Errorf("label %s: %w", name, err)
		}
		labels[name] = value
		rest = rest[i+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil, 0, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return nil, 0, fmt.Errorf("value: %w", err)
	}
	return labels, v, nil
}

// Sub returns the requests served between before and s.
func (s Snapshot) Sub(before Snapshot) Snapshot {
	d := Snapshot{}
	for k, v := range s {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// WriteVerbs are the verbs that change objects.
var WriteVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION"}

// IsWrite reports whether verb changes objects.
func IsWrite(verb string) bool {
	for _, v := range WriteVerbs {
		if v == verb {
			return true
		}
	}
	return false
}

// IsConflict reports whether code is a write that lost a race: 409
// Conflict (stale resourceVersion) or 422 (a JSON patch whose test failed).
func IsConflict(code string) bool { return code == "409" || code == "422" }

// Count adds up the requests for which keep is true.
func (s Snapshot) Count(keep func(Key) bool) float64 {
	n := 0.0
	for k, v := range s {
		if keep(k) {
			n += v
		}
	}
	return n
}

// Requests adds up the requests of one verb on one core or group resource
// (no subresource).
func (s Snapshot) Requests(group, resource, verb string) float64 {
	return s.Count(func(k Key) bool {
		return k.Group == group && k.Resource == resource && k.Subresource == "" && k.Verb == verb
	})
}

// Conflicts adds up the writes of one verb on one resource that ended in a
// conflict.
func (s Snapshot) Conflicts(group, resource, verb string) float64 {
	return s.Count(func(k Key) bool {
		return k.Group == group && k.Resource == resource && k.Subresource == "" && k.Verb == verb && IsConflict(k.Code)
	})
}

// Writes returns the number of writes per "VERB group/resource[/sub]", for
// a record of everything that was written in a phase.
func (s Snapshot) Writes() map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if !IsWrite(k.Verb) {
			continue
		}
		name := k.Resource
		if k.Group != "" {
			name = k.Group + "/" + name
		}
		if k.Subresource != "" {
			name += "/" + k.Subresource
		}
		out[k.Verb+" "+name] += v
	}
	return out
}

// Reads returns the number of reads (GET, LIST, WATCH) per "VERB
// group/resource[/sub]".
func (s Snapshot) Reads() map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if k.Verb != "GET" && k.Verb != "LIST" && k.Verb != "WATCH" {
			continue
		}
		name := k.Resource
		if k.Group != "" {
			name = k.Group + "/" + name
		}
		if k.Subresource != "" {
			name += "/" + k.Subresource
		}
		out[k.Verb+" "+name] += v
	}
	return out
}

// Etcd returns the API server's etcd requests on one resource, per
// operation.
func (s Snapshot) Etcd(group, resource string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if op, ok := strings.CutPrefix(k.Verb, "etcd:"); ok && k.Group == group && k.Resource == resource {
			out[op] += v
		}
	}
	return out
}

// String lists the writes, for logs.
func (s Snapshot) String() string {
	w := s.Writes()
	names := make([]string, 0, len(w))
	for n := range w {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%g", n, w[n])
	}
	return b.String()
}

// Sum adds up the samples of metric in a Prometheus text exposition whose
// labels include every pair of match, and reports whether any was found.
// The benchmark reads a controller's workqueue metrics with it.
func Sum(data []byte, metric string, match map[string]string) (float64, bool, error) {
	sum, found := 0.0, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	withLabels, bare := []byte(metric+"{"), []byte(metric+" ")
	for sc.Scan() {
		line := sc.Bytes()
		var labels map[string]string
		var v float64
		var err error
		switch {
		case bytes.HasPrefix(line, withLabels):
			labels, v, err = parseSeries(string(line[len(withLabels):]))
		case bytes.HasPrefix(line, bare):
			labels, v, err = parseSeries("}" + string(line[len(bare)-1:]))
		default:
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("%s: %w", line, err)
		}
		ok := true
		for k, want := range match {
			if labels[k] != want {
				ok = false
				break
			}
		}
		if ok {
			sum += v
			found = true
		}
	}
	return sum, found, sc.Err()
}

// SumAt reads the Prometheus text exposition served at url over plain HTTP
// (a test's controller with --metrics-secure=false) and sums metric over
// the series whose labels include every pair of match, as Sum does.
func SumAt(ctx context.Context, url, metric string, match map[string]string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("reading %s: HTTP %d", url, resp.StatusCode)
	}
	v, _, err := Sum(data, metric, match)
	return v, err
}
