package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeFrameMatchesJSON holds the bench's fast frame reader to
// encoding/json: for every frame, hot layout or not, decodeFrame gives what
// json.Unmarshal gives, and the hot layouts do take the fast path.
func TestDecodeFrameMatchesJSON(t *testing.T) {
	ev := `"event":{"type":"conversation","seq":17,"id":"0a1b","date":"2026-11-30T12:00:00.000001Z","conversation_id":"c1",`
	for _, tc := range []struct {
		frame string
		fast  bool
	}{
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":" t17"}}}`, true},
		{`{"type":"event","sub":"s12",` + ev + `"event":{"type":"start_response"}}}`, true},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"end"}}}`, true},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":""}}}`, true},
		{`{"type":"event","sub":"b","event":{"type":"conversation","seq":0,"conversation_id":"r1","event":{"type":"append_text","text":" t3"}}}`, true}, // the bare relay's
		{`{"type":"event","sub":"b","event":{"type":"conversation","seq":0,"conversation_id":"r1","date":"d","event":{"type":"end"}}}`, false},
		{`{"type":"caught_up","sub":"s1","seq":104}`, true},
		{`{"type":"caught_up","sub":"s1","seq":0}`, true},
		// Not the hot layout: the full decoder reads them.
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":"a \"quoted\" \u00e9 word"}}}`, false},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":"caf` + "\xc3\xa9" + `"}}}`, false},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"end","usage":{"input_tokens":3}}}}`, false},
		{`{"type":"event","sub":"s1","event":{"type":"agent","seq":3,"id":"x","date":"d","event":{"type":"turn_started","conversation_id":"c1"}}}`, false},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"message","message":{"type":"assistant_message","id":"m","content":[{"type":"text","body":"hi"}]}}}}`, false},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":" t17"}}} `, false},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":" t17"}}`, false},
		{`{"type":"caught_up","sub":"s1","seq":0104}`, false},
		{`{"type":"caught_up","sub":"s1","seq":104,"x":1}`, false},
		{`{"type":"resync","sub":"s1","after":12,"reason":"slow_consumer"}`, false},
		{`{"type":"reply","id":"1","ok":true,"result":{"sub":"s1","epoch":"e","head":3}}`, false},
	} {
		var want frame
		wantErr := json.Unmarshal([]byte(tc.frame), &want)
		var got frame
		var w wireEvent
		err := decodeFrame([]byte(tc.frame), &got, &w, skimNone)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, json says %v", tc.frame, err, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v (event %+v)\nwant %+v (event %+v)", tc.frame, got, got.Event, want, want.Event)
		}
		var f frame
		if fast := fastFrame([]byte(tc.frame), &f, &w, skimNone); fast != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.frame, fast, tc.fast)
		}
	}
}

// TestDecodeFrameSeqOnly: a seq-only client reads every conversation
// event frame's seq and inner type, message or not, without json.
func TestDecodeFrameSeqOnly(t *testing.T) {
	ev := `"event":{"type":"conversation","seq":17,"id":"0a1b","date":"2026-11-30T12:00:00.000001Z","conversation_id":"c1",`
	for raw, typ := range map[string]string{
		`{"type":"event","sub":"s1",` + ev + `"event":{"type":"message","message":{"type":"assistant_message","id":"m","content":[{"type":"text","body":"hi"}]}}}}`: "message",
		`{"type":"event","sub":"s1",` + ev + `"event":{"type":"end","usage":{"input_tokens":3}}}}`:                                                                  "end",
		`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":"a \"q\""}}}`:                                                                    "append_text",
	} {
		var f frame
		var w wireEvent
		if !fastFrame([]byte(raw), &f, &w, skimSeqs) {
			t.Errorf("%s: not read by the fast path", raw)
			continue
		}
		if f.Type != "event" || f.Event == nil || f.Event.Seq != 17 || f.Event.Event.Type != typ {
			t.Errorf("%s: got %+v %+v", raw, f, f.Event)
		}
	}
}

// TestDecodeFrameSkimTexts: a client skimming texts reads an append_text
// event's text, any other conversation event and an agent event only to
// its inner type, all without json; a text the fast path cannot read
// whole (an escape) is decoded in full, as json reads it.
func TestDecodeFrameSkimTexts(t *testing.T) {
	ev := `"event":{"type":"conversation","seq":17,"id":"0a1b","date":"2026-11-30T12:00:00.000001Z","conversation_id":"c1",`
	for _, tc := range []struct {
		frame, kind, typ, text string
		fast                   bool
	}{
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":" t17"}}}`, "conversation", "append_text", " t17", true},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"message","message":{"type":"user_message","id":"m","content":[{"type":"text","body":"hi"}]}}}}`, "conversation", "message", "", true},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"end","usage":{"input_tokens":3}}}}`, "conversation", "end", "", true},
		{`{"type":"event","sub":"s1","event":{"type":"agent","seq":3,"id":"x","date":"d","event":{"type":"turn_started","conversation_id":"c1"}}}`, "agent", "turn_started", "", true},
		{`{"type":"event","sub":"s1",` + ev + `"event":{"type":"append_text","text":"a \"q\""}}}`, "conversation", "append_text", `a "q"`, false},
		{`{"type":"event","sub":"s1","event":{"type":"agent","seq":3,"id":"x","date":"d","event":{"type":"turn_started","conversation_id":"c1"}}`, "", "", "", false},
	} {
		var f frame
		var w wireEvent
		if fast := fastFrame([]byte(tc.frame), &f, &w, skimTexts); fast != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.frame, fast, tc.fast)
		}
		err := decodeFrame([]byte(tc.frame), &f, &w, skimTexts)
		if tc.kind == "" {
			if err == nil {
				t.Errorf("%s: decoded a torn frame", tc.frame)
			}
			continue
		}
		if err != nil || f.Type != "event" || f.Event == nil || f.Event.Kind != tc.kind || f.Event.Event.Type != tc.typ || f.Event.Event.Text != tc.text {
			t.Errorf("%s: got %+v %+v, %v", tc.frame, f, f.Event, err)
			continue
		}
		if want := map[string]int64{"agent": 3, "conversation": 17}[tc.kind]; f.Event.Seq != want {
			t.Errorf("%s: seq %d, want %d", tc.frame, f.Event.Seq, want)
		}
	}
}
