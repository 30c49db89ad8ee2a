package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// openAI speaks the OpenAI chat-completions wire format, which OpenAI, vLLM,
// Ollama and llama.cpp's server all serve.
type openAI struct {
	http    *httpJSON
	baseURL string
	url     string
}

func newOpenAI(cfg Config) *openAI {
	key := cfg.APIKey
	return &openAI{
		baseURL: strings.TrimRight(cfg.BaseURL, "/"),
		url:     apiURL(cfg.BaseURL, "/chat/completions"),
		http: &httpJSON{
			settings: newSettings(cfg),
			client:   clientOf(cfg),
			key:      key,
			headers: func(h http.Header) {
				if key != "" {
					h.Set("Authorization", "Bearer "+key)
				}
			},
			errorBody:        openAIErrorBody,
			requestIDHeaders: []string{"X-Request-Id"},
		},
	}
}

func (p *openAI) Name() string { return p.http.provider }

// String describes the provider without its key.
func (p *openAI) String() string {
	return fmt.Sprintf("llm.Provider{%s model=%q url=%q}", p.http.provider, p.http.model, redactURL(p.url))
}

// Format prints String for every verb.
func (p *openAI) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }

type openAIMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openAIRequest struct {
	Model          string                `json:"model"`
	Messages       []openAIMessage       `json:"messages"`
	N              *int                  `json:"n,omitempty"`
	Temperature    *float64              `json:"temperature,omitempty"`
	ResponseFormat *openAIResponseFormat `json:"response_format,omitempty"`
}

type openAIResponseFormat struct {
	Type       string           `json:"type"`
	JSONSchema openAIJSONSchema `json:"json_schema"`
}

type openAIJSONSchema struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Strict      bool           `json:"strict"`
	Schema      map[string]any `json:"schema"`
}

type openAIResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Refusal *string         `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// content reads a message's content: a string, null, or (on some servers) an
// array of text parts.
func openAIContent(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "output_text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

func openAIErrorBody(body []byte) (typ, msg string) {
	var e struct {
		Error *struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
		// vLLM's shape: the fields at the top level.
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(body, &e) != nil {
		// Some servers answer {"error":"text"}.
		var flat struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &flat) == nil {
			return "", flat.Error
		}
		return "", ""
	}
	if e.Error == nil {
		return e.Type, e.Message
	}
	typ = e.Error.Type
	var code string
	if json.Unmarshal(e.Error.Code, &code) == nil && code != "" {
		typ = code
	}
	return typ, e.Error.Message
}

func (p *openAI) messages(system, prompt string) []openAIMessage {
	return []openAIMessage{
		{Role: "system", Content: system},
		{Role: "user", Content: prompt},
	}
}

func (p *openAI) call(ctx context.Context, op string, req openAIRequest) (*openAIResponse, error) {
	data, err := p.http.post(ctx, op, p.url, req)
	if err != nil {
		return nil, err
	}
	var resp openAIResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, unusable(p.Name(), op, "response is not a chat completion: %s", snippet(string(data)))
	}
	return &resp, nil
}

// Judge asks for the verdict as strict structured output (response_format
// json_schema).
func (p *openAI) Judge(ctx context.Context, prompt string) (Verdict, error) {
	if strings.TrimSpace(prompt) == "" {
		return Verdict{}, invalidArgument("empty prompt")
	}
	resp, err := p.call(ctx, opJudge, openAIRequest{
		Model:    p.http.model,
		Messages: p.messages(JudgeInstructions, prompt),
		ResponseFormat: &openAIResponseFormat{
			Type: "json_schema",
			JSONSchema: openAIJSONSchema{
				Name:        verdictToolName,
				Description: verdictToolDescription,
				Strict:      true,
				Schema:      verdictSchema(),
			},
		},
	})
	if err != nil {
		return Verdict{}, err
	}
	if len(resp.Choices) == 0 {
		return Verdict{}, unusable(p.Name(), opJudge, "no choices in the response")
	}
	c := resp.Choices[0]
	if c.Message.Refusal != nil && strings.TrimSpace(*c.Message.Refusal) != "" {
		return Verdict{}, unusable(p.Name(), opJudge, "the model refused: %s", snippet(*c.Message.Refusal))
	}
	switch c.FinishReason {
	case "length":
		return Verdict{}, unusable(p.Name(), opJudge, "output cut off at the token limit")
	case "content_filter":
		return Verdict{}, unusable(p.Name(), opJudge, "output withheld by the content filter")
	}
	text, ok := openAIContent(c.Message.Content)
	if !ok {
		return Verdict{}, unusable(p.Name(), opJudge, "message content has an unknown shape")
	}
	return parseVerdict(p.Name(), []byte(text))
}

// Candidates sends one request with n and temperature. Servers that ignore n
// answer with fewer choices; the missing answers are asked for with single
// requests, at most maxInFlight at a time.
func (p *openAI) Candidates(ctx context.Context, prompt string, n int, temperature float64) ([]string, error) {
	if err := checkCandidateArgs(prompt, n, temperature); err != nil {
		return nil, err
	}
	ask := func(ctx context.Context, count int) ([]string, error) {
		resp, err := p.call(ctx, opCandidates, openAIRequest{
			Model:       p.http.model,
			Messages:    p.messages(CandidateInstructions, prompt),
			N:           &count,
			Temperature: &temperature,
		})
		if err != nil {
			return nil, err
		}
		var got []string
		for _, c := range resp.Choices {
			if text, ok := openAIContent(c.Message.Content); ok && strings.TrimSpace(text) != "" {
				got = append(got, strings.TrimSpace(text))
			}
		}
		return got, nil
	}
	got, err := ask(ctx, n)
	if err != nil {
		return nil, err
	}
	if len(got) >= n {
		return got[:n], nil
	}
	more, err := p.http.fanOut(ctx, n-len(got), func(ctx context.Context, _ int) (string, error) {
		one, err := ask(ctx, 1)
		if err != nil {
			return "", err
		}
		if len(one) == 0 {
			return "", unusable(p.Name(), opCandidates, "a single-answer request returned no answer")
		}
		return one[0], nil
	})
	if err != nil {
		return nil, err
	}
	return append(got, more...), nil
}
