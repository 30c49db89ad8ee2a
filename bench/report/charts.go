package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func save(p *plot.Plot, path string, w, h vg.Length) error { return p.Save(w, h, path) }

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
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "dont serve without Idempotency-Keys: latency per route (cumulative)", "latency (ms, log scale)", "fraction of requests ≤ x"
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
		name := "POST /v1/tools/" + r
		if r == "dismiss" {
			name += " (the callback)"
		}
		args = append(args, name, pts)
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

// series is one set of bars of a grouped chart: a value per group (-1:
// not measured) and the text shown above each bar.
type series struct {
	name   string
	values []float64
	labels []string
}

// chartGrouped draws side-by-side bars, one group per x category, one bar
// per series in it, each bar labelled with its value; goal, when above 0,
// is drawn as a dashed line named goalName.
func chartGrouped(path, title, ylabel string, groups []string, ss []series, goal float64, goalName string) error {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = title, ylabel
	p.Title.Padding = vg.Points(8)
	w := vg.Points(46)
	p.Add(plotter.NewGrid())
	top := goal
	for i, s := range ss {
		vals := make(plotter.Values, len(groups))
		xys := make(plotter.XYs, len(groups))
		labels := make([]string, len(groups))
		for g := range groups {
			v := -1.0
			if g < len(s.values) {
				v = s.values[g]
			}
			if v < 0 {
				v = 0
			}
			vals[g], xys[g] = v, plotter.XY{X: float64(g), Y: v}
			if g < len(s.labels) {
				labels[g] = s.labels[g]
			}
			top = max(top, v)
		}
		bc, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bc.Color = plotutil.Color(i)
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(float64(i)-float64(len(ss)-1)/2)
		p.Add(bc)
		p.Legend.Add(s.name, bc)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return err
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].XAlign = draw.XCenter
			lb.TextStyle[k].Font.Size = vg.Points(9)
		}
		lb.Offset = vg.Point{X: bc.Offset, Y: vg.Points(3)}
		p.Add(lb)
	}
	if goal > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: goal}, {X: float64(len(groups)) - 0.5, Y: goal}})
		if err != nil {
			return err
		}
		line.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		line.LineStyle.Color = plotutil.Color(3)
		line.LineStyle.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(goalName, line)
	}
	p.Y.Tick.Marker = niceTicks{}
	p.Y.Min, p.Y.Max = 0, top*(1.25+0.08*float64(len(ss))) // room for the legend
	p.Legend.Top = true
	p.NominalX(groups...)
	width := max(6*vg.Inch, vg.Points(120+float64(len(groups)*len(ss))*62))
	return save(p, path, width, 4.5*vg.Inch)
}

// chartColdStart: dont show beside the SQLite floor, wall and CPU time.
func chartColdStart(path string, c coldStart) error {
	f, d := *c.Floor, *c.Show
	title := fmt.Sprintf("CLI cold start: dont show = %s the SQLite floor (goal ≤ %.1f×)", times(safeDiv(d.WallMs, f.WallMs)), goalColdRatio)
	ms := func(v float64) string { return fmt.Sprintf("%.2f ms", v) }
	return chartGrouped(path, title, "milliseconds (median of interleaved runs)",
		[]string{"wall time", "CPU time (user + system)"},
		[]series{
			{fmt.Sprintf("SQLite floor (max RSS %s)", mb1(f.RSSMB)), []float64{f.WallMs, f.CPUMs}, []string{ms(f.WallMs), ms(f.CPUMs)}},
			{fmt.Sprintf("dont show <id> --json (max RSS %s)", mb1(d.RSSMB)), []float64{d.WallMs, d.CPUMs},
				[]string{ms(d.WallMs) + " (" + times(safeDiv(d.WallMs, f.WallMs)) + ")", ms(d.CPUMs) + " (" + times(safeDiv(d.CPUMs, f.CPUMs)) + ")"}},
		}, 0, "")
}

// chartLifecycles: in-process lifecycles/s of dont beside the floor, per benchmark.
func chartLifecycles(path string, l lifecycles) error {
	var groups []string
	var fv, dv []float64
	var fl, dl []string
	for _, r := range l.Rows {
		groups = append(groups, shortBench(r.Name)+"\ndont / floor "+times(r.Ratio))
		fv, dv = append(fv, r.Floor), append(dv, r.Dont)
		fl, dl = append(fl, rate(r.Floor)), append(dl, rate(r.Dont))
	}
	return chartGrouped(path, fmt.Sprintf("In-process spawn lifecycles: dont beside the hand-written SQLite floor (goal ≥ %.1f×)", goalInProcRatio),
		"lifecycles/s (median of rounds)", groups,
		[]series{{"floor (same two commits, hand-written SQL)", fv, fl}, {"dont (tool surface, real SQLite file)", dv, dl}}, 0, "")
}

func shortBench(name string) string {
	name = strings.TrimPrefix(name, "Benchmark")
	if strings.Contains(name, "Interleaved") {
		return strings.Replace(callers(name), "one caller", "1 caller", 1) + ", interleaved"
	}
	return strings.Replace(callers(name), "one caller", "1 caller", 1) + ", separate runs"
}

func serveGroups(s serveLoad) ([]string, []serveMode) {
	var groups []string
	var modes []serveMode
	for _, m := range []serveMode{{false, syncFull}, {true, syncFull}, {false, syncNormal}} {
		if s.rowAt("dont serve", m) != nil || s.rowAt("floor", m) != nil {
			modes = append(modes, m)
			switch {
			case m.Sync == syncNormal:
				groups = append(groups, "synchronous=NORMAL, without keys")
			case m.Keys:
				groups = append(groups, "with Idempotency-Keys")
			default:
				groups = append(groups, "without Idempotency-Keys")
			}
		}
	}
	return groups, modes
}

func serveSeries(s serveLoad, modes []serveMode, v func(serveRow) float64, label func(float64) string) []series {
	var ss []series
	for _, server := range []string{"floor", "dont serve", "baseline"} {
		x := series{name: server}
		any := false
		for _, m := range modes {
			r := s.rowAt(server, m)
			val := -1.0
			if r != nil {
				val, any = v(*r), true
			}
			x.values = append(x.values, val)
			x.labels = append(x.labels, label(val))
		}
		if any {
			ss = append(ss, x)
		}
	}
	if len(ss) > 0 && ss[0].name == "floor" {
		ss[0].name = "floor server (net/http, same two commits)"
	}
	if len(ss) > 1 && ss[1].name == "dont serve" {
		ss[1].name = "dont serve (default flags)"
	}
	return ss
}

// chartServeLifecycles: lifecycles/s of dont serve beside the floor server.
func chartServeLifecycles(path string, s serveLoad) error {
	groups, modes := serveGroups(s)
	for i, m := range modes {
		if r := s.ratio(m); r >= 0 {
			groups[i] += "\ndont / floor " + times(r)
		}
	}
	return chartGrouped(path, fmt.Sprintf("dont serve, 16 workers on one token: lifecycles/s beside its floor (goal ≥ %.1f×)", goalServeRatio),
		"full lifecycles/s (assume → callback)", groups,
		serveSeries(s, modes, func(r serveRow) float64 { return r.Rate }, rate), 0, "")
}

// chartServeTail: the callback's p99 of dont serve beside the floor server.
func chartServeTail(path string, s serveLoad) error {
	groups, modes := serveGroups(s)
	return chartGrouped(path, "dont serve, 16 workers on one token: callback p99 beside its floor",
		"callback p99 latency (ms)", groups,
		serveSeries(s, modes, func(r serveRow) float64 { return r.CallbackP99 }, ms2), goalServeP99Ms, fmt.Sprintf("goal: ≤ %d ms", goalServeP99Ms))
}

// niceTicks marks round values (1, 2 or 5 times a power of ten) with
// plain labels: about five major ticks over the axis.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return nil
	}
	raw := (hi - lo) / 5
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 7 {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		if minor := v + step/2; minor < hi {
			ticks = append(ticks, plot.Tick{Value: minor})
		}
	}
	return ticks
}
