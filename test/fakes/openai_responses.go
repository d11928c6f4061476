package fakes

import (
	"encoding/json"
	"net/http"
)

// openAIResponsesRequest is what the OpenAI fake reads of a Responses request.
type openAIResponsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	Stream             bool            `json:"stream"`
	MaxOutputTokens    int             `json:"max_output_tokens"`
	PreviousResponseID string          `json:"previous_response_id"`
	Tools              []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// responses serves POST /v1/responses as OpenAI does: a response object, or with stream the response.* events
// (created, in_progress, the output item's added, its part's, a text delta a word or the call's arguments, their
// done events, completed), each numbered. A previous_response_id it did not answer is OpenAI's 400.
func (o *OpenAI) responses(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	w.Header().Set("x-request-id", "req_fake_responses")
	if step.Status != 0 {
		fail(w, step)
		return
	}
	var req openAIResponsesRequest
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Input) == 0 {
		jsonError(w, 400, `{"error":{"message":"Missing required parameter: 'input'.","type":"invalid_request_error","param":"input","code":"missing_required_parameter"}}`)
		return
	}
	if req.PreviousResponseID != "" && req.PreviousResponseID != "resp_fake" {
		jsonError(w, 400, `{"error":{"message":"Previous response with id '`+req.PreviousResponseID+`' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`)
		return
	}
	if step.Events != nil {
		sse(w, r, step.Events, step)
		return
	}
	var msgs []chatMessage
	if req.Instructions != "" {
		msgs = append(msgs, chatMessage{Role: "system", Text: req.Instructions})
	}
	var text string
	if json.Unmarshal(req.Input, &text) == nil {
		msgs = append(msgs, chatMessage{Role: "user", Text: text})
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	_ = json.Unmarshal(req.Input, &items)
	for _, it := range items {
		switch {
		case it.Type == "function_call_output":
			msgs = append(msgs, chatMessage{Role: "tool", Text: contentText(it.Output)})
		case it.Role != "":
			msgs = append(msgs, chatMessage{Role: it.Role, Text: contentText(it.Content)})
		}
	}
	tool := ""
	for _, t := range req.Tools {
		if t.Type == "function" && tool == "" {
			tool = t.Name
		}
	}
	reply := replyTo(msgs, req.MaxOutputTokens, tool)
	var item map[string]any
	status := "completed"
	if reply.Finish == "length" {
		status = "incomplete"
	}
	if reply.ToolName != "" {
		item = map[string]any{"type": "function_call", "id": "fc_fake", "call_id": reply.ToolID, "name": reply.ToolName,
			"arguments": reply.ToolArgs, "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text(), "annotations": []any{}}}}
	}
	response := func(status string, output []any, usage any) map[string]any {
		o := map[string]any{"id": "resp_fake", "object": "response", "created_at": 1700000000, "status": status,
			"model": req.Model, "output": output, "usage": usage, "error": nil, "incomplete_details": nil,
			"instructions": nil, "metadata": map[string]any{}, "parallel_tool_calls": true, "temperature": 1.0, "top_p": 1.0,
			"tool_choice": "auto", "tools": []any{}, "frequency_penalty": 0.0, "presence_penalty": 0.0, "completed_at": nil,
			"store": true, "text": map[string]any{"format": map[string]any{"type": "text"}}}
		if status == "completed" {
			o["completed_at"] = 1700000001
		}
		if status == "incomplete" {
			o["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
		}
		return o
	}
	usage := map[string]any{"input_tokens": reply.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": reply.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": reply.PromptTokens + reply.CompletionTokens}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(response(status, []any{item}, usage))
		return
	}
	var events []string
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, len(events)
		b, _ := json.Marshal(fields)
		events = append(events, "event: "+typ+"\ndata: "+string(b)+"\n\n")
	}
	event("response.created", map[string]any{"response": response("in_progress", []any{}, nil)})
	event("response.in_progress", map[string]any{"response": response("in_progress", []any{}, nil)})
	if reply.ToolName != "" {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		event("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		event("response.function_call_arguments.delta", map[string]any{"item_id": "fc_fake", "output_index": 0, "delta": reply.ToolArgs})
		event("response.function_call_arguments.done", map[string]any{"item_id": "fc_fake", "output_index": 0, "arguments": reply.ToolArgs})
	} else {
		event("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message",
			"id": "msg_fake", "status": "in_progress", "role": "assistant", "content": []any{}}})
		event("response.content_part.added", map[string]any{"item_id": "msg_fake", "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, word := range reply.Words {
			event("response.output_text.delta", map[string]any{"item_id": "msg_fake", "output_index": 0, "content_index": 0,
				"delta": word, "logprobs": []any{}})
		}
		event("response.output_text.done", map[string]any{"item_id": "msg_fake", "output_index": 0, "content_index": 0,
			"text": reply.Text(), "logprobs": []any{}})
		event("response.content_part.done", map[string]any{"item_id": "msg_fake", "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": reply.Text(), "annotations": []any{}}})
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response."+status, map[string]any{"response": response(status, []any{item}, usage)})
	sse(w, r, events, step)
}
