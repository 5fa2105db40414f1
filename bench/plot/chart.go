/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/teardown-dev/teardown/bench/report"
)

var (
	white = color.RGBA{255, 255, 255, 255}
	ink   = color.RGBA{30, 30, 30, 255}
	grey  = color.RGBA{150, 150, 150, 255}
	red   = color.RGBA{200, 40, 40, 255}

	scenarioColor = map[string]color.RGBA{
		report.Raw:              {110, 110, 110, 255},
		report.Teardown:         {31, 119, 180, 255},
		report.TeardownWebhook:  {86, 160, 210, 255},
		report.TeardownDeclared: {150, 195, 230, 255},
		report.BaselineDefault:  {230, 130, 30, 255},
		report.BaselineTuned:    {245, 185, 110, 255},
		report.TeardownBefore:   {170, 170, 170, 255},
	}
)

const (
	chartWidth = 1400
	textScale  = 2
	lineHeight = 13 * textScale
	rowHeight  = lineHeight + 8
	labelWidth = 440
	valueWidth = 330
	margin     = 24
)

type bar struct {
	label string
	value float64
	inner float64 // drawn darker inside the bar when > 0 (p50 inside p99)
	color color.RGBA
	text  string
}

type refLine struct {
	value float64
	label string
}

type panel struct {
	title string
	rows  []bar // a zero-value bar is a gap
	refs  []refLine
}

// Chart draws the results: throughput, latency and marginal memory as
// horizontal bars, with the targets as red lines.
func Chart(r *report.Results) image.Image {
	panels := []panel{throughputPanel(r), latencyPanel(r)}
	if len(r.RSS) > 0 {
		panels = append(panels, rssPanel(r))
	}
	height := margin
	for _, p := range panels {
		height += panelHeight(p)
	}
	height += lineHeight + margin
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, height))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	y := margin
	for _, p := range panels {
		drawPanel(img, y, p)
		y += panelHeight(p)
	}
	m := r.Machine
	drawText(img, margin, y, fmt.Sprintf("%d CPUs, Go %s, Kubernetes %s, load %.1f -> %.1f, %s",
		m.CPUs, m.GoVersion, m.Kubernetes, m.LoadAtStart, m.LoadAtEnd, r.Started.UTC().Format("2006-01-02 15:04 UTC")), grey, 1)
	return img
}

// WritePNG draws the chart into path.
func WritePNG(path string, r *report.Results) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, Chart(r)); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func throughputPanel(r *report.Results) panel {
	p := panel{title: "Objects finalized per second (higher is better)"}
	for i, n := range runNs(r) {
		if i > 0 {
			p.rows = append(p.rows, bar{})
		}
		raw, hasRaw := r.Find(report.Raw, n)
		for _, sc := range report.Scenarios {
			run, ok := r.Find(sc, n)
			if !ok {
				continue
			}
			text := fmt.Sprintf("%.0f/s", run.Throughput)
			if run.VsRaw > 0 {
				text += fmt.Sprintf("  %.2fx raw", run.VsRaw)
			}
			p.rows = append(p.rows, bar{label: fmt.Sprintf("N=%s %s", report.Thousands(n), sc), value: run.Throughput, color: scenarioColor[sc], text: text})
		}
		if hasRaw {
			p.refs = append(p.refs, refLine{value: report.MinVsRaw * raw.Throughput, label: fmt.Sprintf("0.8x raw (N=%s)", report.Thousands(n))})
		}
	}
	return p
}

func latencyPanel(r *report.Results) panel {
	p := panel{title: "Delete-to-gone latency, seconds: p99 bar, p50 dark inside (lower is better)"}
	for i, n := range runNs(r) {
		if i > 0 {
			p.rows = append(p.rows, bar{})
		}
		for _, sc := range report.Scenarios {
			run, ok := r.Find(sc, n)
			if !ok {
				continue
			}
			p.rows = append(p.rows, bar{label: fmt.Sprintf("N=%s %s", report.Thousands(n), sc), value: run.P99, inner: run.P50,
				color: scenarioColor[sc], text: fmt.Sprintf("p50 %s  p99 %s", report.Seconds(run.P50), report.Seconds(run.P99))})
		}
	}
	return p
}

func rssPanel(r *report.Results) panel {
	p := panel{title: "Marginal RSS per guarded object, KiB (lower is better)",
		refs: []refLine{{value: report.MaxRSSPerObject / 1024, label: "target 2 KiB"}}}
	for _, m := range r.RSS {
		text := report.KiB(m.PerObject)
		if m.VsBaseline > 0 {
			text += fmt.Sprintf("  %.1fx below baseline", m.VsBaseline)
		}
		p.rows = append(p.rows, bar{label: m.Controller, value: m.PerObject / 1024, color: scenarioColor[m.Controller], text: text})
	}
	return p
}

func runNs(r *report.Results) []int {
	var ns []int
	seen := map[int]bool{}
	for _, run := range r.Runs {
		if !seen[run.N] {
			seen[run.N] = true
			ns = append(ns, run.N)
		}
	}
	return ns
}

func panelHeight(p panel) int {
	return lineHeight*2 + 12 + len(p.rows)*rowHeight + lineHeight + 16
}

func drawPanel(img *image.RGBA, y int, p panel) {
	drawText(img, margin, y, p.title, ink, textScale)
	y += lineHeight + 12
	x0, x1 := margin+labelWidth, chartWidth-margin-valueWidth
	maxV := 0.0
	for _, b := range p.rows {
		maxV = max(maxV, b.value)
	}
	for _, ref := range p.refs {
		maxV = max(maxV, ref.value)
	}
	if maxV <= 0 {
		maxV = 1
	}
	maxV *= 1.05
	scale := func(v float64) int { return x0 + int(v/maxV*float64(x1-x0)) }
	top := y
	for i, b := range p.rows {
		ry := y + i*rowHeight
		if b.label == "" {
			continue
		}
		drawText(img, margin, ry+4, b.label, ink, textScale)
		fill(img, image.Rect(x0, ry+3, scale(b.value), ry+rowHeight-3), b.color)
		if b.inner > 0 {
			fill(img, image.Rect(x0, ry+9, scale(b.inner), ry+rowHeight-9), darker(b.color))
		}
		drawText(img, scale(b.value)+8, ry+4, b.text, ink, textScale)
	}
	bottom := y + len(p.rows)*rowHeight
	fill(img, image.Rect(x0-1, top, x0+1, bottom), grey)
	for i, ref := range p.refs {
		x := scale(ref.value)
		for yy := top; yy < bottom; yy += 8 {
			fill(img, image.Rect(x-1, yy, x+1, min(yy+5, bottom)), red)
		}
		drawText(img, x+4, bottom+2+(i%2)*14, ref.label, red, 1)
	}
}

func darker(c color.RGBA) color.RGBA {
	return color.RGBA{c.R / 2, c.G / 2, c.B / 2, 255}
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r.Intersect(img.Bounds()), image.NewUniform(c), image.Point{}, draw.Src)
}

// drawText draws s with its top-left corner at (x, y), in basicfont's 7x13
// face magnified scale times.
func drawText(dst *image.RGBA, x, y int, s string, c color.Color, scale int) {
	face := basicfont.Face7x13
	w := font.MeasureString(face, s).Ceil()
	if w == 0 {
		return
	}
	small := image.NewRGBA(image.Rect(0, 0, w, 13))
	d := &font.Drawer{Dst: small, Src: image.NewUniform(c), Face: face, Dot: fixed.P(0, face.Ascent)}
	d.DrawString(s)
	draw.NearestNeighbor.Scale(dst, image.Rect(x, y, x+w*scale, y+13*scale), small, small.Bounds(), draw.Over, nil)
}
