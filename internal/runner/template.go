package runner

import (
	"fmt"
	"strings"
	"text/template/parse"
	"time"
)

// A profile's strings use Go's template syntax, parsed by
// text/template/parse and evaluated here, not by text/template.
// text/template looks methods up by name when it runs, and linking that
// makes the Go linker keep every exported method of every type in the
// binary: dont was 24.4 MB instead of 20.5 MB, and each command started
// about 1 ms later (docs/design.md#decisions, "Agent profiles without
// text/template's evaluator"). A profile sees only
// Data's fields, which are strings, lists of strings, a number and a
// time, so what it needs takes no reflection. What is accepted is the
// list in docs/harnesses.md ("Agent profiles"); anything else is refused
// when the profile is checked, before any agent runs.

// templateFuncs are the functions a profile may call.
var templateFuncs = map[string]any{"join": strings.Join, "printf": fmt.Sprintf}

// profileTemplate is one parsed profile string.
type profileTemplate struct{ tree *parse.Tree }

// parseTemplate parses text and refuses what the evaluator does not do.
func parseTemplate(text string) (profileTemplate, error) {
	trees, err := parse.Parse("profile", text, "", "", templateFuncs)
	if err != nil {
		return profileTemplate{}, err
	}
	if len(trees) > 1 {
		return profileTemplate{}, fmt.Errorf("profile: define and block are not supported in agent profiles")
	}
	t := profileTemplate{tree: trees["profile"]} // there even when text is empty
	return t, t.check(t.tree.Root)
}

// check walks n for nodes the evaluator does not handle.
func (t profileTemplate) check(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := t.check(c); err != nil {
				return err
			}
		}
		return nil
	case *parse.TextNode, *parse.CommentNode:
		return nil
	case *parse.ActionNode:
		return t.checkPipe(n.Pipe)
	case *parse.IfNode:
		return t.checkBranch(&n.BranchNode)
	case *parse.RangeNode:
		return t.checkBranch(&n.BranchNode)
	case *parse.WithNode:
		return t.checkBranch(&n.BranchNode)
	}
	return t.refuse(n, "this action is not supported in agent profiles (only fields, if, range, with, join and printf)")
}

func (t profileTemplate) checkBranch(b *parse.BranchNode) error {
	if err := t.checkPipe(b.Pipe); err != nil {
		return err
	}
	if err := t.check(b.List); err != nil {
		return err
	}
	return t.check(b.ElseList)
}

func (t profileTemplate) checkPipe(p *parse.PipeNode) error {
	if len(p.Decl) > 0 {
		return t.refuse(p, "variables are not supported in agent profiles")
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			if err := t.checkArg(a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t profileTemplate) checkArg(a parse.Node) error {
	switch a := a.(type) {
	case *parse.DotNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.IdentifierNode:
		return nil
	case *parse.PipeNode:
		return t.checkPipe(a)
	case *parse.FieldNode:
		if _, ok := (Data{}).field(a.Ident[0]); !ok {
			return t.refuse(a, "no field "+a.Ident[0]+" (the fields are "+strings.Join(dataFields, ", ")+")")
		}
		if len(a.Ident) == 1 || (a.Ident[0] == "ExpiresAt" && len(a.Ident) == 2 && (a.Ident[1] == "Format" || a.Ident[1] == "Unix")) {
			return nil
		}
		return t.refuse(a, "only .ExpiresAt.Format and .ExpiresAt.Unix reach into a field")
	}
	return t.refuse(a, "this operand is not supported in agent profiles (variables, nil and chained calls are not)")
}

func (t profileTemplate) refuse(n parse.Node, why string) error {
	loc, _ := t.tree.ErrorContext(n)
	return fmt.Errorf("%s: %s", loc, why)
}

// execute renders the template with dot as its data.
func (t profileTemplate) execute(dot any) (string, error) {
	var b strings.Builder
	err := t.walk(&b, dot, t.tree.Root)
	return b.String(), err
}

func (t profileTemplate) walk(b *strings.Builder, dot any, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := t.walk(b, dot, c); err != nil {
				return err
			}
		}
	case *parse.TextNode:
		b.Write(n.Text)
	case *parse.ActionNode:
		v, err := t.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		fmt.Fprint(b, v)
	case *parse.IfNode:
		return t.branch(b, dot, &n.BranchNode, false)
	case *parse.WithNode:
		return t.branch(b, dot, &n.BranchNode, true)
	case *parse.RangeNode:
		v, err := t.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		list, ok := v.([]string)
		if !ok {
			return t.refuse(n, fmt.Sprintf("range over %T: only lists (.AllowedTools, .Tools)", v))
		}
		for _, e := range list {
			if err := t.walk(b, e, n.List); err != nil {
				return err
			}
		}
		if len(list) == 0 {
			return t.walk(b, dot, n.ElseList)
		}
	}
	return nil
}

// branch runs an if, or with valueIsDot a with: its list when the
// pipeline's value is true (there . is that value in a with), its else
// list otherwise.
func (t profileTemplate) branch(b *strings.Builder, dot any, n *parse.BranchNode, valueIsDot bool) error {
	v, err := t.pipe(dot, n.Pipe)
	if err != nil {
		return err
	}
	if !truth(v) {
		return t.walk(b, dot, n.ElseList)
	}
	if valueIsDot {
		dot = v
	}
	return t.walk(b, dot, n.List)
}

// pipe runs a pipeline: each command's result is the last argument of
// the next.
func (t profileTemplate) pipe(dot any, p *parse.PipeNode) (any, error) {
	var last any
	for i, c := range p.Cmds {
		args := make([]any, 0, len(c.Args))
		for _, a := range c.Args[1:] {
			v, err := t.arg(dot, a)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		if i > 0 {
			args = append(args, last)
		}
		v, err := t.command(dot, c, args)
		if err != nil {
			return nil, err
		}
		last = v
	}
	return last, nil
}

// command runs one command: its first operand applied to args.
func (t profileTemplate) command(dot any, c *parse.CommandNode, args []any) (any, error) {
	switch first := c.Args[0].(type) {
	case *parse.IdentifierNode:
		return t.call(c, first.Ident, args)
	case *parse.FieldNode:
		v, err := t.field(dot, first)
		if err != nil {
			return nil, err
		}
		if len(first.Ident) == 2 {
			return t.timeMethod(first, v.(time.Time), first.Ident[1], args)
		}
		if len(args) > 0 {
			return nil, t.refuse(c, first.Ident[0]+" is a field, not a function: it takes no arguments")
		}
		return v, nil
	}
	if len(args) > 0 {
		return nil, t.refuse(c, "only a function or .ExpiresAt.Format takes arguments")
	}
	return t.arg(dot, c.Args[0])
}

// arg is an operand's value.
func (t profileTemplate) arg(dot any, a parse.Node) (any, error) {
	switch a := a.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.StringNode:
		return a.Text, nil
	case *parse.BoolNode:
		return a.True, nil
	case *parse.NumberNode:
		if a.IsInt {
			return a.Int64, nil
		}
		return a.Float64, nil
	case *parse.PipeNode:
		return t.pipe(dot, a)
	case *parse.FieldNode:
		v, err := t.field(dot, a)
		if err != nil || len(a.Ident) == 1 {
			return v, err
		}
		return t.timeMethod(a, v.(time.Time), a.Ident[1], nil)
	case *parse.IdentifierNode:
		return t.call(a, a.Ident, nil)
	}
	return nil, t.refuse(a, "this operand is not supported in agent profiles")
}

// field is the first field a names, read from dot.
func (t profileTemplate) field(dot any, a *parse.FieldNode) (any, error) {
	d, ok := dot.(Data)
	if !ok {
		return nil, t.refuse(a, fmt.Sprintf("can't evaluate field %s in a %T: here . is a tool's name", a.Ident[0], dot))
	}
	v, _ := d.field(a.Ident[0])
	return v, nil
}

func (t profileTemplate) timeMethod(n parse.Node, v time.Time, name string, args []any) (any, error) {
	switch {
	case name == "Unix" && len(args) == 0:
		return v.Unix(), nil
	case name == "Format" && len(args) == 1:
		if layout, ok := args[0].(string); ok {
			return v.Format(layout), nil
		}
	}
	return nil, t.refuse(n, "use .ExpiresAt.Format \"layout\" or .ExpiresAt.Unix")
}

func (t profileTemplate) call(n parse.Node, name string, args []any) (any, error) {
	switch name {
	case "join":
		if len(args) == 2 {
			elems, ok1 := args[0].([]string)
			sep, ok2 := args[1].(string)
			if ok1 && ok2 {
				return strings.Join(elems, sep), nil
			}
		}
		return nil, t.refuse(n, "join takes a list and a separator: join .Tools \", \"")
	case "printf":
		if len(args) > 0 {
			if format, ok := args[0].(string); ok {
				return fmt.Sprintf(format, args[1:]...), nil
			}
		}
		return nil, t.refuse(n, "printf takes a format string first")
	}
	return nil, t.refuse(n, "no function "+name+" (the functions are join and printf)")
}

// truth is whether v counts as true in if and with: a non-empty string
// or list, a non-zero number, true; a time or the whole Data always.
func truth(v any) bool {
	switch v := v.(type) {
	case string:
		return v != ""
	case []string:
		return len(v) > 0
	case int:
		return v != 0
	case int64:
		return v != 0
	case float64:
		return v != 0
	case bool:
		return v
	case nil:
		return false
	}
	return true
}

// dataFields are Data's fields by name, as a profile names them.
var dataFields = []string{"RequestID", "RequestKind", "EntityID", "Prompt", "AllowedTools", "Tools", "Endpoint", "ExpiresAt", "MaxToolCalls", "ProjectDir"}

// field is the field of d a profile names (TestEveryDataFieldIsReadable
// holds this to the struct).
func (d Data) field(name string) (any, bool) {
	switch name {
	case "RequestID":
		return d.RequestID, true
	case "RequestKind":
		return d.RequestKind, true
	case "EntityID":
		return d.EntityID, true
	case "Prompt":
		return d.Prompt, true
	case "AllowedTools":
		return d.AllowedTools, true
	case "Tools":
		return d.Tools, true
	case "Endpoint":
		return d.Endpoint, true
	case "ExpiresAt":
		return d.ExpiresAt, true
	case "MaxToolCalls":
		return d.MaxToolCalls, true
	case "ProjectDir":
		return d.ProjectDir, true
	}
	return nil, false
}
