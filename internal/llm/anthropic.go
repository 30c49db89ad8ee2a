package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// anthropicVersion is the Messages API version header value.
const anthropicVersion = "2023-06-01"

// anthropicMaxTokens bounds each answer; the Messages API requires a bound.
const anthropicMaxTokens = 1024

// anthropic speaks the Anthropic Messages API.
type anthropic struct {
	http *httpJSON
	url  string
}

func newAnthropic(cfg Config) *anthropic {
	key := cfg.APIKey
	return &anthropic{
		url: apiURL(cfg.BaseURL, "/messages"),
		http: &httpJSON{
			settings: newSettings(cfg),
			client:   clientOf(cfg),
			key:      key,
			headers: func(h http.Header) {
				if key != "" {
					h.Set("X-Api-Key", key)
				}
				h.Set("Anthropic-Version", anthropicVersion)
			},
			errorBody:        anthropicErrorBody,
			requestIDHeaders: []string{"Request-Id", "X-Request-Id"},
		},
	}
}

func (p *anthropic) Name() string { return p.http.provider }

// String describes the provider without its key.
func (p *anthropic) String() string {
	return fmt.Sprintf("llm.Provider{%s model=%q url=%q}", p.http.provider, p.http.model, redactURL(p.url))
}

// Format prints String for every verb.
func (p *anthropic) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }

type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

type anthropicToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type anthropicRequest struct {
	Model       string               `json:"model"`
	MaxTokens   int                  `json:"max_tokens"`
	System      string               `json:"system,omitempty"`
	Messages    []anthropicMessage   `json:"messages"`
	Temperature *float64             `json:"temperature,omitempty"`
	Tools       []anthropicTool      `json:"tools,omitempty"`
	ToolChoice  *anthropicToolChoice `json:"tool_choice,omitempty"`
}

type anthropicResponse struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Role       string `json:"role"`
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	Content    []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
}

func anthropicErrorBody(body []byte) (typ, msg string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	return e.Error.Type, e.Error.Message
}

func (p *anthropic) call(ctx context.Context, op string, req anthropicRequest) (*anthropicResponse, error) {
	data, err := p.http.post(ctx, op, p.url, req)
	if err != nil {
		return nil, err
	}
	var resp anthropicResponse
	if err := json.Unmarshal(data, &resp); err != nil || resp.Type != "message" {
		return nil, unusable(p.Name(), op, "response is not a message: %s", snippet(string(data)))
	}
	return &resp, nil
}

// Judge forces a call of the verdict tool (tool_choice type "tool") and reads
// the verdict from the tool input.
func (p *anthropic) Judge(ctx context.Context, prompt string) (Verdict, error) {
	if strings.TrimSpace(prompt) == "" {
		return Verdict{}, invalidArgument("empty prompt")
	}
	resp, err := p.call(ctx, opJudge, anthropicRequest{
		Model:     p.http.model,
		MaxTokens: anthropicMaxTokens,
		System:    JudgeInstructions,
		Messages:  []anthropicMessage{{Role: "user", Content: prompt}},
		Tools: []anthropicTool{{
			Name:        verdictToolName,
			Description: verdictToolDescription,
			InputSchema: verdictSchema(),
		}},
		ToolChoice: &anthropicToolChoice{Type: "tool", Name: verdictToolName},
	})
	if err != nil {
		return Verdict{}, err
	}
	if resp.StopReason == "max_tokens" {
		return Verdict{}, unusable(p.Name(), opJudge, "output cut off at the token limit")
	}
	for _, c := range resp.Content {
		if c.Type == "tool_use" && c.Name == verdictToolName {
			return parseVerdict(p.Name(), c.Input)
		}
	}
	return Verdict{}, unusable(p.Name(), opJudge, "no %s tool call in the response (stop_reason %q)", verdictToolName, resp.StopReason)
}

// Candidates sends n concurrent requests (at most maxInFlight in flight) at
// the exact temperature: the Messages API has no n.
func (p *anthropic) Candidates(ctx context.Context, prompt string, n int, temperature float64) ([]string, error) {
	if err := checkCandidateArgs(prompt, n, temperature); err != nil {
		return nil, err
	}
	return p.http.fanOut(ctx, n, func(ctx context.Context, _ int) (string, error) {
		resp, err := p.call(ctx, opCandidates, anthropicRequest{
			Model:       p.http.model,
			MaxTokens:   anthropicMaxTokens,
			System:      CandidateInstructions,
			Messages:    []anthropicMessage{{Role: "user", Content: prompt}},
			Temperature: &temperature,
		})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, c := range resp.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
		text := strings.TrimSpace(b.String())
		if text == "" {
			return "", unusable(p.Name(), opCandidates, "a response had no text (stop_reason %q)", resp.StopReason)
		}
		return text, nil
	})
}
