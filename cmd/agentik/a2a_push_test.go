package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
	"github.com/agentik/agentik/internal/webhook"
)

// rpcError is a JSON-RPC error as A2A answers it.
type rpcError struct {
	Code    int
	Message string
}

// a2aRPC calls an A2A JSON-RPC method on the default agent as key.
func a2aRPC(t *testing.T, p *proc, key, method string, params any) (json.RawMessage, *rpcError) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	code, body := call(t, key, "POST", p.url("/a2a/agentik"), string(b))
	var res struct {
		Result json.RawMessage
		Error  *rpcError
	}
	if code != 200 || json.Unmarshal(body, &res) != nil {
		t.Fatalf("%s: %d %s", method, code, body)
	}
	return res.Result, res.Error
}

// a2aSend sends text in a new context with a push config to hook and
// returns the task's id.
func a2aSend(t *testing.T, p *proc, key, text, hook string) (string, *rpcError) {
	t.Helper()
	params := map[string]any{"message": map[string]any{"messageId": agent.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}}
	if hook != "" {
		params["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"url": hook, "token": text}}
	}
	res, e := a2aRPC(t, p, key, "SendMessage", params)
	if e != nil {
		return "", e
	}
	var task struct {
		Task struct{ ID string }
	}
	if err := json.Unmarshal(res, &task); err != nil || task.Task.ID == "" {
		t.Fatalf("SendMessage: %v %s", err, res)
	}
	return task.Task.ID, nil
}

// TestA2APushRefusesInternalAddresses: without AGENTIK_PUSH_ALLOW a
// member's push config may not reach loopback (here a live receiver),
// link-local (cloud metadata), private or unspecified addresses, by
// address or by a name that resolves there: JSON-RPC invalid params and
// REST 400 INVALID_ARGUMENT, naming the address and the allow-list; a
// send that carries such a config starts no turn; nothing reaches the
// receiver.
func TestA2APushRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	var hits sync.Map
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Store(r.URL.Path, true) }))
	defer recv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(recv.URL, "http://"))
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS="+a2aKey)
	member := memberKey(t, p)

	task, e := a2aSend(t, p, member, "a task of mine", "")
	if e != nil {
		t.Fatalf("a send without push: %+v", e)
	}
	for _, u := range []string{recv.URL + "/loopback", "http://localhost:" + port + "/by-name", "http://[::1]:" + port + "/v6",
		"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://0.0.0.0:" + port + "/unspecified"} {
		_, e := a2aRPC(t, p, member, "CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "url": u})
		if e == nil || e.Code != -32602 || !strings.Contains(e.Message, "AGENTIK_PUSH_ALLOW") {
			t.Errorf("a push config to %s: %+v, want -32602 naming AGENTIK_PUSH_ALLOW", u, e)
		}
	}
	code, body := call(t, member, "POST", p.url("/a2a/agentik/tasks/"+task+"/pushNotificationConfigs"), `{"url":"`+recv.URL+`/rest"}`)
	if code != 400 || !strings.Contains(string(body), "INVALID_ARGUMENT") || !strings.Contains(string(body), "a loopback address") {
		t.Errorf("REST push config to loopback: %d %s", code, body)
	}
	var before, after struct{ Total int }
	must(t, member, "GET", p.url("/agentik/conversations"), "", &before)
	if _, e := a2aSend(t, p, member, "push me inward", recv.URL+"/send"); e == nil || e.Code != -32602 {
		t.Errorf("a send with a loopback push config: %+v, want -32602", e)
	}
	must(t, member, "GET", p.url("/agentik/conversations"), "", &after)
	if after.Total != before.Total || before.Total != 1 {
		t.Errorf("the refused send made a conversation: %d before, %d after", before.Total, after.Total)
	}
	hits.Range(func(k, _ any) bool { t.Errorf("the loopback receiver got %s", k); return true })
}

// TestA2APushDeadReceiversStallNobody: a member's ten tasks push to
// five receivers that never answer (loopback, opened by
// AGENTIK_PUSH_ALLOW): at most her share of the workers (4) hang at once,
// another member's push arrives at once all the same, and the dead
// deliveries are given up when their task's cap (AGENTIK_PUSH_TIMEOUT)
// passes.
func TestA2APushDeadReceiversStallNobody(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	var mu sync.Mutex
	var hanging, most, reached int
	released := false   // a delivery was given up: its receiver learns it late
	var first time.Time // the first delivery's arrival
	dead := make([]*httptest.Server, 5)
	for i := range dead {
		dead[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // then the server sees agentik hang up (r.Context ends)
			mu.Lock()
			hanging++
			reached++
			if first.IsZero() {
				first = time.Now()
			}
			if !released && time.Since(first) < 5*time.Second {
				// Counted in the first wave only: a receiver sees a
				// given-up delivery's hang-up some time after agentik
				// started the next one, which would count twice here.
				// No delivery is given up before its 6 s cap
				// (AGENTIK_PUSH_TIMEOUT), so every arrival within 5 s of
				// the first is one agentik holds at once with it.
				most = max(most, hanging)
			}
			mu.Unlock()
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			mu.Lock()
			hanging--
			released = true
			mu.Unlock()
		}))
		defer dead[i].Close()
	}
	defer close(stop)
	got := make(chan string, 10)
	liveRecv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Task struct{ ID string } }
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- body.Task.ID
	}))
	defer liveRecv.Close()
	_, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS="+a2aKey,
		"AGENTIK_PUSH_ALLOW=127.0.0.0/8", "AGENTIK_PUSH_TIMEOUT=6s")
	ann := memberKey(t, p)
	var u struct{ ID string }
	must(t, a2aKey, "POST", p.url("/agentik/users"), `{"name":"bob","email":"bob@example.com"}`, &u)
	var k struct{ Key string }
	must(t, a2aKey, "POST", p.url("/agentik/users/"+u.ID+"/keys"), `{"name":"laptop"}`, &k)
	bob := k.Key

	for i := range 10 {
		if _, e := a2aSend(t, p, ann, fmt.Sprintf("dead %d", i), fmt.Sprintf("%s/dead-%d", dead[i%len(dead)].URL, i)); e != nil {
			t.Fatalf("ann's send %d: %+v", i, e)
		}
	}
	testwait.For(t, "ann's pushes to reach the dead receivers", func() bool { mu.Lock(); defer mu.Unlock(); return hanging > 0 })
	sent := time.Now()
	bobTask, e := a2aSend(t, p, bob, "alive", liveRecv.URL+"/bob")
	if e != nil {
		t.Fatalf("bob's send: %+v", e)
	}
	select {
	case id := <-got:
		if id != bobTask {
			t.Errorf("the live receiver got task %s, want bob's %s", id, bobTask)
		}
		mu.Lock()
		if hanging == 0 {
			t.Errorf("bob's push arrived only once none of ann's deliveries hung any more (after their cap): it waited for them")
		}
		mu.Unlock()
		t.Logf("bob's push arrived %v after his send, while ann's receivers hang", time.Since(sent))
	case <-time.After(30 * time.Second):
		t.Fatalf("bob's push did not arrive while ann's receivers hang\n%s", p.logs)
	}
	// Past the cap, each of ann's deliveries is given up.
	testwait.For(t, "ann's ten deliveries given up at their cap", func() bool {
		return strings.Count(p.logs.String(), "a2a_push_given_up") >= 10
	})
	mu.Lock()
	defer mu.Unlock()
	if most > 4 || reached < 4 {
		t.Errorf("ann's deliveries: %d reached the dead receivers, at most %d at once; want her share, 4", reached, most)
	}
}

// TestA2APushPendingAcrossRestart: a task whose receiver hangs is pending
// (its own cursor) while the log's cursor moves on; after a kill -9 and a
// restart it is delivered again, once the receiver answers, and a task
// sent after the restart is delivered too.
func TestA2APushPendingAcrossRestart(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	answering := false
	tasks := map[string]int{}
	stop := make(chan struct{})
	defer close(stop)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Task struct{ ID string } }
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		tasks[body.Task.ID]++
		ok := answering
		mu.Unlock()
		if !ok {
			select { // hang, as a dead receiver does
			case <-r.Context().Done():
			case <-stop:
			}
		}
	}))
	defer recv.Close()
	_, fakeURL := llmtest.NewHTTPServer(t)
	db := filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + a2aKey, "AGENTIK_PUSH_ALLOW=127.0.0.1"}
	p := start(t, freeAddr(t), db, env...)
	first, e := a2aSend(t, p, a2aKey, "before the kill", recv.URL+"/first")
	if e != nil {
		t.Fatalf("send: %+v", e)
	}
	testwait.For(t, "the first push to hang at the receiver", func() bool { mu.Lock(); defer mu.Unlock(); return tasks[first] > 0 })
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	mu.Lock()
	answering = true
	mu.Unlock()
	p = start(t, p.addr, db, env...)
	second, e := a2aSend(t, p, a2aKey, "after the restart", recv.URL+"/second")
	if e != nil {
		t.Fatalf("send after the restart: %+v", e)
	}
	testwait.For(t, "both tasks delivered after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return tasks[first] >= 2 && tasks[second] >= 1
	})
}

// TestA2APushOnceAcrossInstances: two instances on one PostgreSQL both
// follow the log, but each settled task's push notification, and each
// turn's turn.ended webhook, reaches its receiver once, whichever
// instance ran the turn; when the instance that delivers (it leads) is
// killed, the other leads and delivers.
func TestA2APushOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	tasks, hooks := map[string]int{}, map[string]int{} // by task id; by webhook-id
	var hookSeq int64                                  // the highest turn.ended seq received
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/webhook" {
			var m webhook.Message
			_ = json.NewDecoder(r.Body).Decode(&m)
			if m.Type == webhook.EventTurnEnded {
				hooks[r.Header.Get("webhook-id")]++
				hookSeq = max(hookSeq, m.Data.Seq)
			}
			return
		}
		var body struct{ Task struct{ ID string } }
		_ = json.NewDecoder(r.Body).Decode(&body)
		tasks[body.Task.ID]++
	}))
	defer recv.Close()
	dsn := freshSchema(t)
	_, fakeURL := llmtest.NewHTTPServer(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + a2aKey, "AGENTIK_PUSH_ALLOW=127.0.0.1",
		"AGENTIK_WEBHOOKS=" + recv.URL + "/webhook", "AGENTIK_WEBHOOK_SECRET=" + a2aSecret}
	a := startDSN(t, dsn, env...)
	b := startDSN(t, dsn, env...)
	var ids []string
	for i := range 6 {
		p := a
		if i%2 == 1 {
			p = b
		}
		id, e := a2aSend(t, p, a2aKey, fmt.Sprintf("task %d", i), recv.URL+"/hook")
		if e != nil {
			t.Fatalf("send %d: %+v", i, e)
		}
		ids = append(ids, id)
		testwait.For(t, "task "+id+" delivered", func() bool { mu.Lock(); defer mu.Unlock(); return tasks[id] > 0 })
	}
	testwait.For(t, "six turn.ended webhooks", func() bool { mu.Lock(); defer mu.Unlock(); return len(hooks) == 6 })
	// Before the kill, the deliverers recorded what they delivered (a
	// delivery not yet recorded is made again by the next leader: at
	// least once).
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	meta := func(key string) string {
		var v string
		_ = conn.QueryRow(t.Context(), "SELECT value FROM meta WHERE key = $1", key).Scan(&v)
		return v
	}
	mu.Lock()
	seq := hookSeq
	mu.Unlock()
	testwait.For(t, "the deliveries recorded", func() bool {
		_, cur, _ := strings.Cut(meta(webhook.CursorKey(recv.URL+"/webhook")), ":") // from:done
		done, _ := strconv.ParseInt(cur, 10, 64)
		return meta("a2a:push-pending") == "{}" && done >= seq
	})
	// One instance delivers: the one that leads. Kill it; the other
	// leads and delivers a last task, sent through it.
	leader, other := a, b
	if !strings.Contains(a.logs.String(), "msg=leading") {
		leader, other = b, a
	}
	if !strings.Contains(leader.logs.String(), "msg=leading") || strings.Contains(other.logs.String(), "msg=leading") {
		t.Fatalf("want one instance leading the deliverers; a:\n%s\nb:\n%s", a.logs.String(), b.logs.String())
	}
	_ = leader.cmd.Process.Kill()
	_ = leader.cmd.Wait()
	testwait.For(t, "the survivor leading", func() bool { return strings.Contains(other.logs.String(), "msg=leading") })
	last, e := a2aSend(t, other, a2aKey, "after the leader's death", recv.URL+"/hook")
	if e != nil {
		t.Fatalf("send through the survivor: %+v", e)
	}
	testwait.For(t, "the task sent after the leader's death delivered", func() bool { mu.Lock(); defer mu.Unlock(); return tasks[last] > 0 })
	testwait.For(t, "its turn.ended webhook", func() bool { mu.Lock(); defer mu.Unlock(); return len(hooks) == 7 })
	mu.Lock()
	defer mu.Unlock()
	for _, id := range append(ids, last) {
		if tasks[id] != 1 {
			t.Errorf("task %s: %d push notifications, want 1 (%v)", id, tasks[id], tasks)
		}
	}
	for id, n := range hooks {
		if n != 1 {
			t.Errorf("webhook %s delivered %d times, want 1 (%v)", id, n, hooks)
		}
	}
}
