package linearize

import "github.com/dont-cli/dont/internal/envelope"

// Warnings are matched by more than their code: a warning that names a
// request (a spawn's request id, a question's id) must name the one the
// operation acted on, and one that carries an outcome must carry the
// outcome the response reports. A loser told of the wrong winner, or a
// late callback warned about another spawn, is then a violation even
// when the codes are right.

// warned reports whether out carries a warning of code that names id
// and, where it carries an outcome and want is set, the outcome want.
// Warnings about other requests (the sweep a call runs first reports
// what it found) are neither required nor refused.
func warned(out Output, code envelope.WarningCode, id, want string) bool {
	for i, c := range out.Warnings {
		if c != code || at(out.WarningIDs, i) != id {
			continue
		}
		if o := at(out.WarningOutcomes, i); o != "" && want != "" && o != want {
			continue
		}
		return true
	}
	return false
}

func at(list []string, i int) string {
	if i < len(list) {
		return list[i]
	}
	return ""
}
