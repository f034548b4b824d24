package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// rest: the REST floor, listing conversations (1000 stored) under a
// loopback load generator, against a bare net/http handler that returns
// the same bytes.
func (b *bench) rest(ctx context.Context) error {
	if _, err := b.seed(ctx); err != nil {
		return err
	}
	at, err := b.agentik(ctx, "seeded.db")
	if err != nil {
		return err
	}
	defer at.Close()
	list := at.URL() + "/agentik/conversations"
	body, err := b.get(ctx, list)
	if err != nil {
		return err
	}
	bt, err := startBare(ctx, b.fake.URL)
	if err != nil {
		return err
	}
	defer bt.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, bt.URL()+"/list", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("bare list: %w", err)
	}
	resp.Body.Close()

	b.progress("rest bare: %d workers for %s", b.sz.RestWorkers, b.sz.RestDuration)
	bare, err := b.load(ctx, bt.URL()+"/list", len(body))
	if err != nil {
		return err
	}
	b.progress("rest agentik: %d workers for %s", b.sz.RestWorkers, b.sz.RestDuration)
	ag, err := b.load(ctx, list, len(body))
	if err != nil {
		return err
	}
	note := fmt.Sprintf("GET /agentik/conversations (default page of 100, %d stored, %d-byte body); %d keep-alive workers, %s", b.sz.RestConvs+1, len(body), b.sz.RestWorkers, b.sz.RestDuration)
	b.add(Row{Scenario: "rest", Metric: "list conversations", Unit: "req/s", Bare: bare.rate, Agentik: ag.rate, Note: note}, nil)
	b.add(Row{Scenario: "rest", Metric: "list conversations p99", Unit: "ms", Bare: quantileMS(bare.lat, 0.99), Agentik: quantileMS(ag.lat, 0.99)}, nil)
	return nil
}

func (b *bench) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s %v: %.200s", url, resp.Status, err, body)
	}
	return body, nil
}

type loadRes struct {
	rate float64
	lat  []time.Duration
}

// load runs RestWorkers keep-alive clients against url for RestDuration;
// every answer must be 200 with a body of size bytes.
func (b *bench) load(ctx context.Context, url string, size int) (loadRes, error) {
	var (
		mu   sync.Mutex
		res  loadRes
		wg   sync.WaitGroup
		errs []error
	)
	stop := time.Now().Add(b.sz.RestDuration)
	t0 := time.Now()
	for range b.sz.RestWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			buf := make([]byte, 0, size+512)
			for time.Now().Before(stop) && ctx.Err() == nil {
				s := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := b.hc.Do(req)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				w := bytes.NewBuffer(buf[:0])
				_, err = io.Copy(w, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || w.Len() != size {
					mu.Lock()
					errs = append(errs, fmt.Errorf("GET %s: %s, %d bytes (want %d), %v", url, resp.Status, w.Len(), size, err))
					mu.Unlock()
					return
				}
				lat = append(lat, time.Since(s))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return res, errs[0]
	}
	res.rate = float64(len(res.lat)) / time.Since(t0).Seconds()
	return res, nil
}
