package session

import "testing"

// TestSyntheticLinesAreAPIErrorsNotRequests pins design §2.3: an assistant
// line with model "<synthetic>" is never a request (no Request, no
// tokens, no model); it is an APIError whose kind comes from the "error"
// field, else from the text (limit notices), else isApiErrorMessage, else
// "No response requested.".
func TestSyntheticLinesAreAPIErrorsNotRequests(t *testing.T) {
	tests := []struct {
		name       string
		line       Syn
		wantKind   string
		wantStatus int64
	}{
		{
			name:       "error field rate_limit with status",
			line:       Syn{Text: "You've hit your limit · resets 3:40pm (America/Ciudad_Juarez)", Error: "rate_limit", APIError: true, Status: 429},
			wantKind:   "rate_limit",
			wantStatus: 429,
		},
		{
			name:     "error field names the kind even when the text says otherwise",
			line:     Syn{Text: "Invalid API key · Please run /login", Error: "authentication_failed", APIError: true},
			wantKind: "authentication_failed",
		},
		{
			name:     "error field invalid_request",
			line:     Syn{Text: "Prompt is too long", Error: "invalid_request", APIError: true},
			wantKind: "invalid_request",
		},
		{
			name:     "limit text without error field is rate_limit",
			line:     Syn{Text: "Claude AI usage limit reached|1750000000"},
			wantKind: "rate_limit",
		},
		{
			name:     "limit text with isApiErrorMessage but no error field is rate_limit",
			line:     Syn{Text: "You've hit your monthly spend limit · raise it at claude.ai/settings/usage", APIError: true},
			wantKind: "rate_limit",
		},
		{
			name:     "isApiErrorMessage without error field is api_error",
			line:     Syn{Text: "API Error: 502 Cloudflare encountered an error processing this request: Bad Gateway", APIError: true},
			wantKind: "api_error",
		},
		{
			name:     "timeout with isApiErrorMessage is api_error",
			line:     Syn{Text: "Request timed out (check API_TIMEOUT_MS)", APIError: true},
			wantKind: "api_error",
		},
		{
			name:     "No response requested. is no_response",
			line:     Syn{Text: "No response requested."},
			wantKind: "no_response",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.line
			s.UUID, s.Parent, s.Sec, s.Msg = "e1", "u1", 5, "c31d1760-52dc-472d-94bb-a72cdcc4479d"
			log, st := run(t, file{sessionPath(sessA), []string{U{UUID: "u1", Text: "hi"}.String(), s.String()}})
			if len(log.requests) != 0 || len(log.updates) != 0 {
				t.Errorf("synthetic line made requests %+v / updates %+v", log.requests, log.updates)
			}
			if st.DuplicateRequestLines != 0 || st.NoMessageID != 0 {
				t.Errorf("stats %+v, want no request accounting", st)
			}
			e := one(t, "api errors", log.errors)
			if e.Kind != tc.wantKind || e.Status != tc.wantStatus || !e.Time.Equal(at(5)) {
				t.Errorf("api error %+v, want kind %q status %d at %v", e, tc.wantKind, tc.wantStatus, at(5))
			}
			if e.SessionID != sessA || e.TurnID != "u1" {
				t.Errorf("api error where %+v, want session %s turn u1", e.Where, sessA)
			}
		})
	}
}

// TestAPIErrorDedupAndRetries pins the APIError bookkeeping: a synthetic
// line counts once per message id across files (a resumed copy), system
// api_error records are retries (kind "retry") counted once per uuid,
// and a synthetic line inside a subagent is that subagent's.
func TestAPIErrorDedupAndRetries(t *testing.T) {
	limit := Syn{UUID: "e1", Parent: "u1", Sec: 5, Msg: "c31d1760-52dc-472d-94bb-a72cdcc4479d", Text: "You've hit your limit · resets 3:40pm", Error: "rate_limit", APIError: true, Status: 429}
	limitCopy := limit
	limitCopy.Session = sessB
	limitInAgent := Syn{UUID: "e9", Parent: "s1", Sec: 5, Msg: "a15d7dd6-5240-40b2-ad7e-d0464af7baaf", Text: "You've hit your limit · resets 3:40pm", Error: "rate_limit", APIError: true, Status: 429, Agent: "a2244978809bf394d"}
	retry := systemAPIError("r1", "u1", sessA, 3)
	tests := []struct {
		name  string
		files []file
		want  map[string]int // kind → count
		agent string         // AgentID of the rate_limit error
	}{
		{
			name:  "synthetic line copied into a resumed session counts once",
			files: []file{{sessionPath(sessA), []string{limit.String()}}, {sessionPath(sessB), []string{limitCopy.String()}}},
			want:  map[string]int{"rate_limit": 1},
		},
		{
			name:  "same synthetic line twice in one file counts once",
			files: []file{{sessionPath(sessA), []string{limit.String(), limit.String()}}},
			want:  map[string]int{"rate_limit": 1},
		},
		{
			name:  "system api_error is a retry",
			files: []file{{sessionPath(sessA), []string{retry}}},
			want:  map[string]int{"retry": 1},
		},
		{
			name:  "system api_error copy counts once",
			files: []file{{sessionPath(sessA), []string{retry}}, {sessionPath(sessB), []string{retry}}},
			want:  map[string]int{"retry": 1},
		},
		{
			name: "retries then the limit notice",
			files: []file{{sessionPath(sessA), []string{
				retry, systemAPIError("r2", "r1", sessA, 4), limit.String(),
			}}},
			want: map[string]int{"retry": 2, "rate_limit": 1},
		},
		{
			name: "synthetic line in a subagent file",
			files: []file{{subagentPath(sessA, "a2244978809bf394d"), []string{
				U{UUID: "s1", Sec: 1, Agent: "a2244978809bf394d", Text: "Build all Laravel Blade views."}.String(), limitInAgent.String(),
			}}},
			want:  map[string]int{"rate_limit": 1},
			agent: "a2244978809bf394d",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := run(t, tc.files...)
			got := map[string]int{}
			for _, e := range log.errors {
				got[e.Kind]++
				if e.Kind == "rate_limit" && e.AgentID != tc.agent {
					t.Errorf("rate_limit AgentID %q, want %q", e.AgentID, tc.agent)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("api errors %v, want %v", got, tc.want)
			}
			for k, n := range tc.want {
				if got[k] != n {
					t.Errorf("api errors{kind=%s} = %d, want %d (all: %v)", k, got[k], n, got)
				}
			}
			if len(log.requests) != 0 {
				t.Errorf("requests %+v, want none", log.requests)
			}
		})
	}
}
