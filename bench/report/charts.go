package main

import (
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

type bar struct {
	label string
	value float64
}

func save(p *plot.Plot, path string, w, h vg.Length) error { return p.Save(w, h, path) }

// chartBars is a labelled bar chart.
func chartBars(path, title, ylabel string, bars []bar) error {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = title, ylabel
	vals := make(plotter.Values, len(bars))
	names := make([]string, len(bars))
	for i, b := range bars {
		vals[i], names[i] = b.value, b.label
	}
	if len(bars) == 0 {
		vals, names = plotter.Values{0}, []string{"(none)"}
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(40))
	if err != nil {
		return err
	}
	bc.Color = plotutil.Color(0)
	p.Add(bc)
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.2
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -0.8, -0.2
	return save(p, path, vg.Points(200+220*float64(len(names))), 5*vg.Inch)
}

// chartBenchmarks shows ns/op of every Go benchmark (log scale).
func chartBenchmarks(path string, benches []benchmark) error {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = "Go benchmarks", "ns/op (log scale)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	var names []string
	pts := plotter.XYs{}
	for _, b := range benches {
		v := b.Metrics["ns/op"]
		if v <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: float64(len(names)), Y: v})
		names = append(names, b.Name)
	}
	if len(pts) == 0 {
		pts, names = plotter.XYs{{X: 0, Y: 1}}, []string{"(none)"}
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Radius = vg.Points(4)
	sc.GlyphStyle.Color = plotutil.Color(0)
	p.Add(sc, plotter.NewGrid())
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -0.9, -0.2
	return save(p, path, vg.Points(160+60*float64(len(names))), 5*vg.Inch)
}

// chartLatencies draws the cumulative distribution of each route's latencies.
func chartLatencies(path string, lat map[string][]float64) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "dont serve: latency distribution per route", "latency (ms, log scale)", "fraction of requests ≤ x"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	routes := make([]string, 0, len(lat))
	for r := range lat {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	var args []any
	for _, r := range routes {
		v := append([]float64(nil), lat[r]...)
		sort.Float64s(v)
		pts := make(plotter.XYs, 0, 200)
		step := max(1, len(v)/200)
		for i := 0; i < len(v); i += step {
			if v[i] > 0 {
				pts = append(pts, plotter.XY{X: v[i], Y: float64(i+1) / float64(len(v))})
			}
		}
		if n := len(v); n > 0 && v[n-1] > 0 {
			pts = append(pts, plotter.XY{X: v[n-1], Y: 1})
		}
		args = append(args, "POST /v1/tools/"+r, pts)
	}
	if len(args) > 0 {
		if err := plotutil.AddLines(p, args...); err != nil {
			return err
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return save(p, path, 7*vg.Inch, 4.5*vg.Inch)
}

// chartHistogram is a histogram of values.
func chartHistogram(path, title, xlabel string, values []float64) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, "spawns"
	h, err := plotter.NewHist(plotter.Values(values), 25)
	if err != nil {
		return err
	}
	h.FillColor = plotutil.Color(2)
	p.Add(h)
	return save(p, path, 6*vg.Inch, 4*vg.Inch)
}

// chartSoak draws RSS and goroutines over the soak.
func chartSoak(path string, rows []soakRow) error {
	p := plot.New()
	p.Title.Text, p.X.Label.Text = "Soak: dont serve over time", "seconds"
	rssPts, gPts := make(plotter.XYs, len(rows)), make(plotter.XYs, len(rows))
	for i, r := range rows {
		rssPts[i] = plotter.XY{X: float64(r.seconds), Y: float64(r.rssKB) / 1024}
		gPts[i] = plotter.XY{X: float64(r.seconds), Y: float64(r.goroutines)}
	}
	if err := plotutil.AddLinePoints(p, "RSS (MB)", rssPts, "goroutines", gPts); err != nil {
		return err
	}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	return save(p, path, 7*vg.Inch, 4*vg.Inch)
}
