package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"
)

// people: what isolation costs the fan-out. One agentik with accounts runs
// the same load twice over: FanoutSubs/10 conversations, each with a turn
// watched by 10 WebSocket subscribers of its owner, first with every
// conversation one user's, then spread over 100 users (each subscriber
// authenticated as its conversation's owner). Every event reaches the
// same number of subscribers both times; what differs is the broker's
// owner check and the principal on every connection. The two loads
// alternate (peopleRounds times each) and the medians are compared.
// peopleRounds is how many times each of the two loads runs.
const peopleRounds = 5

func (b *bench) people(ctx context.Context) error {
	if b.inproc {
		return fmt.Errorf("people runs agentik with accounts: run it without -cpuprofile/-trace")
	}
	const subsPer = 10
	users := 100
	runs := max(1, b.sz.FanoutSubs/subsPer)
	users = min(users, runs)
	ntok, delay := b.sz.FanoutTokens, b.sz.FanoutDelay
	admin := "bench-admin-" + fmt.Sprint(time.Now().UnixNano())
	t, err := startAgentik(ctx, b.bin, filepath.Join(b.dir, "people.db"), b.fake.URL, "AGENTIK_API_KEYS="+admin)
	if err != nil {
		return err
	}
	defer t.Close()
	keys := make([]string, users)
	for i := range keys {
		var u struct{ ID string }
		if err := b.postAs(ctx, t.URL()+"/agentik/users", admin, map[string]any{"name": fmt.Sprintf("bench user %d", i)}, &u); err != nil {
			return err
		}
		var k struct{ Key string }
		if err := b.postAs(ctx, t.URL()+"/agentik/users/"+u.ID+"/keys", admin, map[string]any{"name": "bench"}, &k); err != nil {
			return err
		}
		keys[i] = k.Key
	}
	b.progress("people: %d users, %d turns × %d tokens, %d subscribers each", users, runs, ntok, subsPer)
	measure := func(keys []string) (loadResult, error) {
		pt := peopleTarget{target: t, keys: keys}
		sd, err := b.agentikMix(ctx, pt, runs, ntok, delay, false, false, subsPer)
		if err != nil {
			return loadResult{}, err
		}
		defer sd.close()
		return b.drive(ctx, sd, runs, ntok, delay)
	}
	perEvent := func(r loadResult) float64 { return float64(r.cpu.Microseconds()) / float64(max(1, r.received)) }
	// Five rounds (an odd count: the median is a measured value), the
	// order flipped every round (one, many; many, one; …) so that a drift
	// in the machine's load weighs on both alike: two rounds swung the
	// ratio from 0.97× to 1.30× on a quiet machine.
	var one, many []float64
	for round := range peopleRounds {
		var r1, r100 loadResult
		var err error
		for _, first := range []bool{round%2 == 0, round%2 != 0} {
			if first {
				if r1, err = measure(keys[:1]); err != nil {
					return fmt.Errorf("people, one user: %w", err)
				}
			} else if r100, err = measure(keys); err != nil {
				return fmt.Errorf("people, %d users: %w", users, err)
			}
		}
		if r1.lost+r100.lost > 0 {
			return fmt.Errorf("people: lost %d events with one user, %d with %d users", r1.lost, r100.lost, users)
		}
		one, many = append(one, perEvent(r1)), append(many, perEvent(r100))
		b.progress("people round %d: %.1f µs per delivered event with one user, %.1f with %d users", round+1, one[round], many[round], users)
	}
	b.add(Row{Scenario: "people", Metric: fmt.Sprintf("fan-out CPU per delivered event, %d users (bare: one user)", users), Unit: "µs",
		Bare: median(one), Agentik: median(many), Target: "≤ 1.05×",
		Note: fmt.Sprintf("%d turns × %d tokens at %.0f tokens/s, %d subscribers each; the same agentik, loads alternated, median of %d", runs, ntok, float64(time.Second)/float64(delay), subsPer, peopleRounds)},
		func(r Row) bool { return r.Ratio <= 1.05 })
	return nil
}

// postAs posts body as JSON with bearer key and decodes the answer into out.
func (b *bench) postAs(ctx context.Context, url, key string, body, out any) error {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("post %s: %w", url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post %s: %s: %.300s", url, resp.Status, msg)
	}
	return json.Unmarshal(msg, out)
}
