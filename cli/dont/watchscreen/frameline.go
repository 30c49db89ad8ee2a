package watchscreen

import (
	"fmt"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/visible"
)

// FrameLine is one frame for a person (`dont approvals frames` at a
// terminal): its agent-written fields (call id, tiers, preview, who
// answered) are made visible, never obeyed.
func FrameLine(f approvals.Frame) string {
	if f.Kind == approvals.FrameRequested {
		until := "-"
		if f.Deadline != nil {
			until = f.Deadline.Local().Format("15:04:05")
		}
		return fmt.Sprintf("#%d %s asked: %s → %s for call %s, until %s: %s", f.Cursor, visible.Line(f.RequestID), visible.Line(string(f.From)),
			visible.Line(string(f.To)), visible.Line(f.CallID), until, visible.Line(f.Preview))
	}
	return fmt.Sprintf("#%d %s %s%s", f.Cursor, visible.Line(f.RequestID), visible.Line(string(f.Verdict)), byLine(f.By))
}

// byLine is " by <who answered>", or "" when nobody did.
func byLine(by string) string {
	if by == "" {
		return ""
	}
	return " by " + visible.Line(by)
}
