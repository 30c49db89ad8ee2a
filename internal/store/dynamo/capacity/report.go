package capacity

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// Report divides the counter's totals by b.N as the benchmark's metrics
// (WRU/<per>, RRU/<per>, …) and logs the breakdown by operation. A read
// the counter could not make fails the benchmark.
func (c *Counter) Report(b *testing.B, per string) {
	b.Helper()
	if err := c.Err(); err != nil {
		b.Fatalf("the counter could not read what the writes replaced: %v", err)
	}
	n := float64(b.N)
	t := c.Total()
	b.ReportMetric(t.WriteUnits/n, "WRU/"+per)
	b.ReportMetric(t.IndexWriteUnits/n, "indexWRU/"+per)
	b.ReportMetric(t.ReadUnits/n, "RRU/"+per)
	b.ReportMetric(float64(t.ItemsWritten)/n, "items-written/"+per)
	b.ReportMetric(float64(t.ItemsRead)/n, "items-read/"+per)
	b.ReportMetric(float64(t.Requests)/n, "requests/"+per)
	var lines []string
	for op, u := range c.Usage() {
		lines = append(lines, fmt.Sprintf("  %-20s requests %6.2f  items read %8.2f  written %5.2f  RRU %8.2f  WRU %5.2f (index %4.2f)  estimated %d/%d",
			op, float64(u.Requests)/n, float64(u.ItemsRead)/n, float64(u.ItemsWritten)/n, u.ReadUnits/n, u.WriteUnits/n, u.IndexWriteUnits/n, u.Estimated, u.Requests))
	}
	sort.Strings(lines)
	b.Logf("per %s (b.N=%d):\n%s", per, b.N, strings.Join(lines, "\n"))
}
