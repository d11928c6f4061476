package fakes

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Gemini errors for chat, in Google's RPC shape.
const (
	GeminiServerError = `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`
	GeminiBadInput    = `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified\n","status":"INVALID_ARGUMENT"}}`
)

// geminiChatRequest is what the fake reads of a generateContent request for text.
type geminiChatRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             *string `json:"text"`
			FunctionResponse *struct {
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"systemInstruction"`
	GenerationConfig struct {
		MaxOutputTokens    int      `json:"maxOutputTokens"`
		ResponseModalities []string `json:"responseModalities"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func geminiInvalid(w http.ResponseWriter, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400, "message": msg, "status": "INVALID_ARGUMENT"}})
	jsonError(w, 400, string(b))
}

// chat serves :generateContent and :streamGenerateContent?alt=sse for text as Gemini does: candidates with
// parts (text, or a functionCall), the finish reason (STOP, MAX_TOKENS) on the last event, which also carries
// text, and usageMetadata on every event. With Safety set, the prompt is blocked.
func (g *Gemini) chat(w http.ResponseWriter, r *http.Request, req geminiChatRequest, step Step) {
	if len(req.Contents) == 0 {
		jsonError(w, 400, GeminiBadInput)
		return
	}
	var msgs []chatMessage
	if si := req.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			msgs = append(msgs, chatMessage{Role: "system", Text: p.Text})
		}
	}
	for _, c := range req.Contents {
		if c.Role != "user" && c.Role != "model" {
			geminiInvalid(w, "Please use a valid role: user, model.")
			return
		}
		if len(c.Parts) == 0 {
			geminiInvalid(w, "* GenerateContentRequest.contents.parts: contents.parts must not be empty.")
			return
		}
		for _, p := range c.Parts {
			switch {
			case p.Text != nil:
				msgs = append(msgs, chatMessage{Role: c.Role, Text: *p.Text})
			case p.FunctionResponse != nil:
				if p.FunctionResponse.Name == "" {
					geminiInvalid(w, "* GenerateContentRequest.contents.parts.function_response.name: Name cannot be empty.")
					return
				}
				var resp struct{ Content string }
				_ = json.Unmarshal(p.FunctionResponse.Response, &resp)
				msgs = append(msgs, chatMessage{Role: "tool", Text: resp.Content})
			}
		}
	}
	if step.Events != nil {
		sse(w, r, step.Events, step)
		return
	}
	if g.Safety { // the prompt is blocked: no candidates, a block reason
		sse(w, r, []string{`data: {"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}` + "\r\n\r\n"}, step)
		return
	}
	tool := ""
	if len(req.Tools) > 0 && len(req.Tools[0].FunctionDeclarations) > 0 {
		tool = req.Tools[0].FunctionDeclarations[0].Name
	}
	reply := replyTo(msgs, req.GenerationConfig.MaxOutputTokens, tool)
	finish := "STOP"
	if reply.Finish == "length" {
		finish = "MAX_TOKENS"
	}
	usage := map[string]any{"promptTokenCount": reply.PromptTokens, "candidatesTokenCount": reply.CompletionTokens,
		"totalTokenCount": reply.PromptTokens + reply.CompletionTokens}
	event := func(parts []any, finish string) map[string]any {
		cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": "gemini-fake", "responseId": "resp_fake"}
	}
	var events []map[string]any
	if reply.ToolName != "" {
		events = append(events, event([]any{map[string]any{"functionCall": map[string]any{"name": reply.ToolName,
			"args": json.RawMessage(reply.ToolArgs)}}}, finish))
	} else {
		for i, word := range reply.Words {
			f := ""
			if i == len(reply.Words)-1 {
				f = finish
			}
			events = append(events, event([]any{map[string]any{"text": word}}, f))
		}
	}
	if !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
		var parts []any
		if reply.ToolName != "" {
			parts = events[0]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
		} else {
			parts = []any{map[string]any{"text": reply.Text()}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(event(parts, finish))
		return
	}
	out := make([]string, len(events))
	for i, e := range events {
		b, _ := json.Marshal(e)
		out[i] = "data: " + string(b) + "\r\n\r\n"
	}
	sse(w, r, out, step)
}
