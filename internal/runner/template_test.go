package runner_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"text/template"

	"github.com/dont-cli/dont/internal/runner"
)

// promptOf renders tmpl as a profile's prompt_template for request().
func promptOf(tmpl string) (string, error) {
	p := runner.Profile{Name: "t", Command: []string{"agent"}, Prompt: runner.PromptStdin, PromptTemplate: tmpl}
	r, err := p.RenderIn(request(), "http://127.0.0.1:8787", "/src/project")
	return r.Stdin, err
}

// What a profile may write renders as text/template renders it over the
// same data (docs/harnesses.md lists it).
func TestAProfileTemplateRendersAsTextTemplateDoes(t *testing.T) {
	req := request()
	data := runner.Data{RequestID: req.RequestID, RequestKind: string(req.RequestKind), EntityID: req.EntityID,
		Prompt: req.Context.Prompt, AllowedTools: req.Context.AllowedTools, Tools: req.Context.AllowedTools,
		Endpoint: "http://127.0.0.1:8787", ExpiresAt: req.ExpiresAt, MaxToolCalls: req.Context.MaxToolCalls, ProjectDir: "/src/project"}
	for _, tmpl := range []string{
		" ", "  {{/* only a comment */}} ", // an empty one means the default prompt
		"plain text, no action",
		"{{.RequestID}} {{.RequestKind}} {{.EntityID}} {{.Endpoint}} {{.MaxToolCalls}} {{.ProjectDir}}",
		"{{.Prompt}}\nRun only: {{join .Tools \", \"}}.",
		"{{.AllowedTools}} {{.ExpiresAt}}",
		`{{.ExpiresAt.Format "2006-01-02T15:04:05Z07:00"}} {{.ExpiresAt.Unix}}`,
		`{{if .ProjectDir}}files under {{.ProjectDir}}{{else}}no files{{end}}`,
		`{{if .Nope}}{{end}}`,
		`{{range .Tools}}[{{.}}]{{else}}none{{end}}`,
		`{{range .Endpoint | printf "%s" | printf "%.0s"}}{{end}}`,
		`{{with .ProjectDir}}in {{.}}{{end}}{{with .RequestKind}}{{.}}{{else}}-{{end}}`,
		`{{printf "%s has %d tool calls" .RequestID .MaxToolCalls}} {{.RequestID | printf "%q"}}`,
		`{{/* a comment */}}{{- .RequestKind -}} !`,
	} {
		want, wantErr := referenceRender(tmpl, data)
		got, err := promptOf(tmpl)
		if (err != nil) != (wantErr != nil) || (err == nil && got != want) {
			t.Errorf("%q: got %q (%v), text/template gives %q (%v)", tmpl, got, err, want, wantErr)
		}
	}
}

// referenceRender is text/template over data with the profile functions.
func referenceRender(tmpl string, data runner.Data) (string, error) {
	t, err := template.New("").Funcs(template.FuncMap{"join": strings.Join, "printf": fmt.Sprintf}).Parse(tmpl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// What the evaluator does not do is refused when the profile is checked,
// with where it is, before any agent runs.
func TestAProfileUsingWhatAgentProfilesDoNotDoIsRefused(t *testing.T) {
	for tmpl, want := range map[string]string{
		`{{$x := .Prompt}}{{$x}}`:                 "variables are not supported",
		`{{range $i, $t := .Tools}}{{$t}}{{end}}`: "variables are not supported",
		`{{define "x"}}y{{end}}{{template "x"}}`:  "define and block are not supported",
		`{{template "x"}}`:                        "not supported in agent profiles",
		`{{len .Tools}}`:                          `function "len" not defined`,
		`{{.Secret}}`:                             "no field Secret",
		`{{.Prompt.Len}}`:                         "only .ExpiresAt.Format and .ExpiresAt.Unix",
		`{{.ExpiresAt.Add 1}}`:                    "only .ExpiresAt.Format and .ExpiresAt.Unix",
		`{{(.ExpiresAt).UTC}}`:                    "chained calls are not",
		`{{nil}}`:                                 "nil and chained calls are not",
		`{{range .Tools}}{{break}}{{end}}`:        "not supported in agent profiles",
		`{{.Prompt "x"}}`:                         "Prompt is a field, not a function",
		`{{join .Prompt ","}}`:                    "join takes a list and a separator",
		`{{printf 1}}`:                            "printf takes a format string first",
		`{{range .Prompt}}{{end}}`:                "range over string",
		`{{.ExpiresAt.Format 1}}`:                 `use .ExpiresAt.Format "layout"`,
		`{{"x" 1}}`:                               "only a function or .ExpiresAt.Format takes arguments",
	} {
		_, err := promptOf(tmpl)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", tmpl, err, want)
		}
	}
	// In a tool's template . is the tool's name: a field is refused there.
	p := runner.Profile{Name: "t", Command: []string{"agent"}, Prompt: runner.PromptStdin, Tool: "{{.RequestID}}"}
	if _, err := p.Render(request(), "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "a tool's name") {
		t.Errorf("a field in the tool template: %v", err)
	}
}

// Every field of Data is readable by its name in a profile, and nothing
// else is.
func TestEveryDataFieldIsReadable(t *testing.T) {
	typ := reflect.TypeFor[runner.Data]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if _, err := promptOf("{{." + name + "}}"); err != nil {
			t.Errorf("the field %s of Data is not readable in a profile: %v", name, err)
		}
	}
}
