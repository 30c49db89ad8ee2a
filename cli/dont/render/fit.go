package render

// Cut is s within n terminal columns, cut with "…" when longer.
func Cut(s string, n int) string { return cut(s, n) }
