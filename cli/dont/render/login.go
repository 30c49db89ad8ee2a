package render

import "strings"

// whoami is `dont whoami`: who the verbs run as.
func whoami(p *printer, d doc) {
	roles := strings.Join(d.strs("roles"), ", ")
	if roles == "" {
		roles = "none"
	}
	project := d.s("project")
	if project == "" {
		project = "the one project of this store"
	}
	person := "no (an agent's powers)"
	if d.b("person") {
		person = "yes"
	}
	p.fields("principal", d.s("principal"), "role", d.s("role"), "roles", roles, "a person", person, "project", project)
}

// login is `dont login` and `dont logout`.
func login(p *printer, d doc) {
	if d.has("logged_out") {
		if d.b("logged_out") {
			p.line("forgot the login %s (%s)", d.s("profile"), d.s("file"))
		} else {
			p.line("no login named %s was stored", d.s("profile"))
		}
		return
	}
	p.line("logged in as %s at %s (profile %s)", d.s("principal"), d.s("endpoint"), d.s("profile"))
	p.fields("stored in", d.s("file"))
}

func slackLinkCode(p *printer, d doc) {
	p.fields("code", d.s("code"), "send in Slack", d.s("command"), "expires", d.s("expires_at"), "answers as", d.s("token_id"))
}
