package agent

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Preferences (DESIGN.md §12.5a) are a person's own settings of the
// browser UI, kept on the server so that every browser they sign in from
// shows the same: the theme, the model a new chat starts on, and the
// language dates are written in. Each person reads and writes only their
// own.

// Themes.
const (
	ThemeSystem = "system" // the browser's prefers-color-scheme
	ThemeLight  = "light"
	ThemeDark   = "dark"
)

// Themes are the values of Preferences.Theme.
var Themes = []string{ThemeSystem, ThemeLight, ThemeDark}

// Preferences are one person's settings.
type Preferences struct {
	Theme string `json:"theme"` // one of Themes
	// Model is the model a new chat starts on ("" for the server's
	// default); one the server lists.
	Model string `json:"model"`
	// Locale is the BCP 47 language tag dates and times are written in
	// ("" for the browser's), such as "en-GB" or "de".
	Locale    string    `json:"locale"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// PreferencesInput changes preferences: nil fields stay as they are.
type PreferencesInput struct {
	Theme  *string `json:"theme"`
	Model  *string `json:"model"`
	Locale *string `json:"locale"`
}

// PreferenceStore keeps preferences.
type PreferenceStore interface {
	// Preferences are user's; the zero value (no error) when they never
	// saved any.
	Preferences(ctx context.Context, user string) (Preferences, error)
	// PutPreferences stores user's.
	PutPreferences(ctx context.Context, user string, p Preferences) error
}

// PreferencesService reads and changes the caller's preferences.
type PreferencesService struct {
	store  PreferenceStore
	models func() ([]ModelInfo, string) // the models a preference may name
	now    Clock
}

// NewPreferences makes the preferences service; models lists the models a
// default model may be (Runner.Models); now is time.Now when nil.
func NewPreferences(st PreferenceStore, models func() ([]ModelInfo, string), now Clock) (*PreferencesService, error) {
	if st == nil || models == nil {
		return nil, errors.New("preferences: a store and the model list are required")
	}
	if now == nil {
		now = time.Now
	}
	return &PreferencesService{store: st, models: models, now: now}, nil
}

// localeTag is a BCP 47 tag as browsers take it: a language, then
// subtags of letters and digits.
var localeTag = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,4}$`)

// Mine are the caller's preferences (the defaults when none are saved).
func (ps *PreferencesService) Mine(ctx context.Context) (Preferences, error) {
	me := PrincipalFrom(ctx).UserID
	if me == "" {
		return Preferences{Theme: ThemeSystem}, nil
	}
	p, err := ps.store.Preferences(ctx, me)
	if err != nil {
		return Preferences{}, err
	}
	if p.Theme == "" {
		p.Theme = ThemeSystem
	}
	return p, nil
}

// Update changes the caller's preferences; nothing is stored when a value
// is refused.
func (ps *PreferencesService) Update(ctx context.Context, in PreferencesInput) (Preferences, error) {
	me := PrincipalFrom(ctx).UserID
	if me == "" {
		return Preferences{}, Errorf(CodeUnauthorized, "sign in to keep settings")
	}
	p, err := ps.Mine(ctx)
	if err != nil {
		return Preferences{}, err
	}
	if in.Theme != nil {
		if !slices.Contains(Themes, *in.Theme) {
			return Preferences{}, Errorf(CodeBadRequest, "theme must be one of %s, got %q", strings.Join(Themes, ", "), Shorten(*in.Theme, 40))
		}
		p.Theme = *in.Theme
	}
	if in.Model != nil {
		if *in.Model != "" {
			ms, _ := ps.models()
			if !slices.ContainsFunc(ms, func(m ModelInfo) bool { return m.ID == *in.Model }) {
				return Preferences{}, Errorf(CodeBadRequest, "model %q is not one this server offers (GET /agentik/models lists them; \"\" for the default)", Shorten(*in.Model, 80))
			}
		}
		p.Model = *in.Model
	}
	if in.Locale != nil {
		if *in.Locale != "" && !localeTag.MatchString(*in.Locale) {
			return Preferences{}, Errorf(CodeBadRequest, "locale must be a BCP 47 language tag such as en-GB or de (\"\" for the browser's), got %q", Shorten(*in.Locale, 40))
		}
		p.Locale = *in.Locale
	}
	p.UpdatedAt = ps.now().UTC()
	if err := ps.store.PutPreferences(ctx, me, p); err != nil {
		return Preferences{}, err
	}
	return p, nil
}
