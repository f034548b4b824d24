package store

import (
	"testing"
	"time"
)

// The admin panel's settings: absent until put, replaced in place, gone
// once put empty; on both databases.
func TestSiteSettings(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		got, err := s.SiteSettings(ctx)
		if err != nil || len(got) != 0 {
			t.Fatalf("fresh: %v, %v", got, err)
		}
		for _, kv := range [][2]string{{"providers", `[{"name":"a"}]`}, {"default_model", `"a/m"`}, {"providers", `[{"name":"b"}]`}} {
			if err := s.PutSiteSetting(ctx, kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		got, err = s.SiteSettings(ctx)
		if err != nil || len(got) != 2 || got["providers"] != `[{"name":"b"}]` || got["default_model"] != `"a/m"` {
			t.Fatalf("after puts: %v, %v", got, err)
		}
		if err := s.PutSiteSetting(ctx, "default_model", ""); err != nil {
			t.Fatal(err)
		}
		if got, err = s.SiteSettings(ctx); err != nil || len(got) != 1 {
			t.Fatalf("after delete: %v, %v", got, err)
		}
	})
}

// TestPostgresSiteNotice: a change of the settings on one instance tells
// the other (OnSite), not itself.
func TestPostgresSiteNotice(t *testing.T) {
	dsn := postgresOnly(t)
	var ra, rb recorder
	a := open(t, dsn, Options{Publish: ra.publish})
	b := open(t, dsn, Options{Publish: rb.publish})
	told, self := make(chan struct{}, 1), make(chan struct{}, 1)
	b.OnSite(func() {
		select {
		case told <- struct{}{}:
		default:
		}
	})
	a.OnSite(func() {
		select {
		case self <- struct{}{}:
		default:
		}
	})
	if err := a.PutSiteSetting(t.Context(), "system_prompt", `"Be brief."`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("the other instance was not told")
	}
	select {
	case <-self:
		t.Fatal("the instance that made the change was told")
	default:
	}
}
