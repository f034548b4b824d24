package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/testwait"
	"github.com/agentik/agentik/internal/webhook"
)

// TestMain fails the package when a deliverer goroutine outlives its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// verify checks a delivery the way the Standard Webhooks spec says a
// receiver must: HMAC-SHA256 over "id.timestamp.body" with the base64
// secret after "whsec_", compared to each "v1,…" signature.
func verify(h http.Header, body []byte) bool {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Split(h.Get("webhook-signature"), " ") {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return true
		}
	}
	return false
}

// receiver records deliveries; while down it answers 503.
type receiver struct {
	mu        sync.Mutex
	down      bool
	refused   int
	delivered []webhook.Message
	ids       []string
	badSig    int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.down {
		rc.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if !verify(r.Header, body) {
		rc.badSig++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var m webhook.Message
	if err := json.Unmarshal(body, &m); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.delivered = append(rc.delivered, m)
	rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
}

func (rc *receiver) snapshot() ([]webhook.Message, []string, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]webhook.Message(nil), rc.delivered...), append([]string(nil), rc.ids...), rc.refused
}

type rig struct {
	st     *store.Store
	b      *broker.Broker
	r      *agent.Runner
	fake   *llmtest.Server
	secret []byte
}

func newRig(t *testing.T) *rig {
	fake, url := llmtest.NewHTTPServer(t)
	var b *broker.Broker
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "agentik.db"),
		store.Options{Publish: func(evs []agent.Encoded) { b.PublishEncoded(evs) }})
	if err != nil {
		t.Fatal(err)
	}
	b = broker.New(st, nil)
	m, err := llm.New(llm.Config{BaseURL: url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	r := agent.NewRunner(agent.Config{Store: st, Publisher: b, Model: m})
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = st.Close()
	})
	return &rig{st: st, b: b, r: r, fake: fake, secret: key}
}

// start runs a deliverer to url; the returned func stops it and waits.
func (rg *rig) start(url string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		webhook.Run(ctx, webhook.Config{URL: url, Secret: rg.secret, Log: rg.b, Cursors: rg.st,
			Head:    func(ctx context.Context) (int64, error) { _, h, err := rg.st.Bounds(ctx); return h, err },
			Backoff: func(int) time.Duration { return time.Millisecond }, Timeout: time.Second})
	}()
	return func() { cancel(); <-done }
}

func (rg *rig) turn(t *testing.T, id, text, answer string) {
	t.Helper()
	rg.fake.Enqueue(llmtest.Reply{Text: answer, Usage: &agent.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}})
	if _, err := rg.r.Start(context.Background(), agent.StartInput{ConversationID: id, Content: []agent.Content{agent.Text(text)}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the turn to end", func() bool {
		c, err := rg.r.Conversation(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return !c.Running
	})
}

func waitDelivered(t *testing.T, rc *receiver, n int) []webhook.Message {
	t.Helper()
	var got []webhook.Message
	testwait.For(t, fmt.Sprintf("%d deliveries", n), func() bool {
		got, _, _ = rc.snapshot()
		return len(got) >= n
	})
	return got
}

func TestWebhookSignedDelivery(t *testing.T) {
	rg := newRig(t)
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	stop := rg.start(srv.URL)
	defer stop()
	c, err := rg.r.Create(context.Background(), agent.NewConversation{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	waitCursor(t, rg, srv.URL)
	rg.turn(t, c.ID, "hi", "hello there")
	got := waitDelivered(t, rc, 1)
	d := got[0].Data
	if got[0].Type != "turn.ended" || d.ConversationID != c.ID || d.Outcome != "ok" || d.Text != "hello there" ||
		d.Usage == nil || d.Usage.TotalTokens != 7 {
		t.Errorf("delivered %+v", got[0])
	}
	if rc.badSig != 0 {
		t.Errorf("%d deliveries failed the spec's signature check", rc.badSig)
	}
}

// waitCursor waits until the deliverer to url stored its starting cursor
// (a new receiver starts at the head: turns before it are not sent).
func waitCursor(t *testing.T, rg *rig, url string) {
	t.Helper()
	testwait.ForErr(t, "the deliverer's starting cursor", func() error {
		_, err := rg.st.Cursor(context.Background(), webhook.CursorKey(url))
		return err
	})
}

// waitDone waits until the deliverer to url stored that it delivered the
// turn that ended at seq.
func waitDone(t *testing.T, rg *rig, url string, seq int64) {
	t.Helper()
	want := ":" + strconv.FormatInt(seq, 10)
	testwait.For(t, fmt.Sprintf("the delivery of seq %d stored", seq), func() bool {
		v, err := rg.st.Cursor(context.Background(), webhook.CursorKey(url))
		return err == nil && strings.HasSuffix(v, want)
	})
}

func TestWebhookOutageAndRestartLoseNothing(t *testing.T) {
	rg := newRig(t)
	rc := &receiver{down: true}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	stop := rg.start(srv.URL)
	c, err := rg.r.Create(context.Background(), agent.NewConversation{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	waitCursor(t, rg, srv.URL)

	// Turn 1 while the receiver is down: it is refused, retried.
	rg.turn(t, c.ID, "one", "first")
	testwait.For(t, "retries while the receiver is down", func() bool {
		_, _, refused := rc.snapshot()
		return refused >= 2
	})
	// Restart agentik's deliverer while turn 1 is undelivered; turn 2 ends
	// while it is stopped.
	stop()
	rg.turn(t, c.ID, "two", "second")
	rc.mu.Lock()
	rc.down = false
	rc.mu.Unlock()
	stop = rg.start(srv.URL)
	got := waitDelivered(t, rc, 2)
	// Restart again once both are acknowledged (the receiver counts a
	// delivery before the deliverer reads its answer and stores the
	// cursor): nothing is sent twice.
	waitDone(t, rg, srv.URL, got[1].Data.Seq)
	stop()
	stop = rg.start(srv.URL)
	rg.turn(t, c.ID, "three", "third")
	got = waitDelivered(t, rc, 3)
	stop()
	_, ids, _ := rc.snapshot()
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Data.Text)
	}
	if strings.Join(texts, ",") != "first,second,third" {
		t.Errorf("delivered %q, want first,second,third once each", texts)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("webhook-id %s delivered twice", id)
		}
		seen[id] = true
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"", "secret", "whsec_!!", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))} {
		if _, err := webhook.ParseSecret(s); err == nil {
			t.Errorf("ParseSecret(%q) accepted", s)
		}
	}
	if _, err := webhook.ParseSecret(secret); err != nil {
		t.Error(err)
	}
	for _, s := range []string{"ftp://x", "http://", "not a url", "http://ok, //x"} {
		if _, err := webhook.ParseURLs(s); err == nil {
			t.Errorf("ParseURLs(%q) accepted", s)
		}
	}
	if got, err := webhook.ParseURLs(" http://a/x , https://b "); err != nil || len(got) != 2 {
		t.Errorf("ParseURLs = %v, %v", got, err)
	}
}

// A receiver that hangs or redirects forever costs bounded attempts and
// no goroutine once the deliverer stops (goleak in TestMain).
func TestWebhookHangingAndRedirectingReceivers(t *testing.T) {
	var release chan struct{} // lets the hanging handlers go once a subtest is done
	for name, h := range map[string]http.HandlerFunc{
		"hang": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
		},
	} {
		t.Run(name, func(t *testing.T) {
			rg := newRig(t)
			var mu sync.Mutex
			attempts := 0
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				attempts++
				mu.Unlock()
				h(w, r)
			}))
			release = make(chan struct{})
			srv.Start()
			defer srv.Close()
			defer close(release)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				webhook.Run(ctx, webhook.Config{URL: srv.URL, Secret: rg.secret, Log: rg.b, Cursors: rg.st,
					Head:    func(ctx context.Context) (int64, error) { _, h, err := rg.st.Bounds(ctx); return h, err },
					Backoff: func(int) time.Duration { return time.Millisecond }, Timeout: 20 * time.Millisecond})
			}()
			c, _ := rg.r.Create(context.Background(), agent.NewConversation{Title: "t"})
			waitCursor(t, rg, srv.URL)
			rg.turn(t, c.ID, "hi", "answer") // the turn ends although no delivery succeeds
			testwait.For(t, "three attempts", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return attempts >= 3
			})
			cancel()
			<-done
		})
	}
}
