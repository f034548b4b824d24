package a2a

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
)

// Pushes are signed with a key of their own, never with the turn.ended
// webhooks' secret (AGENTIK_WEBHOOK_SECRET): a member chooses where pushes
// go, and whoever receives a signature made with a shared secret could
// forge what else that secret signs. The key is an Ed25519 key (Standard
// Webhooks' asymmetric "v1a," signature over "id.timestamp.body"), so a
// receiver verifies with the public key agentik publishes at
// PushKeysPath (a JWKS) and can forge nothing. It is derived from
// AGENTIK_SECRET_KEY when set (the same on every instance, across
// restarts), else made once and kept in the database's key-value table.

// PushKeysPath is where the push key's public half is published (public:
// receivers fetch it without a key).
const PushKeysPath = Prefix + "push-keys"

// pushKeyKV keeps a made push key's seed (hex) without AGENTIK_SECRET_KEY.
const pushKeyKV = "a2a:push-signing-key"

// pushSigner is the push key.
type pushSigner struct {
	priv ed25519.PrivateKey
	kid  string
}

func newSigner(seed []byte) *pushSigner {
	priv := ed25519.NewKeyFromSeed(seed)
	sum := sha256.Sum256(priv.Public().(ed25519.PublicKey))
	return &pushSigner{priv: priv, kid: base64.RawURLEncoding.EncodeToString(sum[:12])}
}

// sign is the webhook-signature of a push.
func (k *pushSigner) sign(id string, ts int64, body []byte) string {
	msg := append([]byte(id+"."+strconv.FormatInt(ts, 10)+"."), body...)
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(k.priv, msg))
}

// jwks is the public key as a JSON Web Key Set (RFC 8037's OKP key).
func (k *pushSigner) jwks() map[string]any {
	return map[string]any{"keys": []map[string]string{{
		"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": k.kid,
		"x": base64.RawURLEncoding.EncodeToString(k.priv.Public().(ed25519.PublicKey)),
	}}}
}

// pushKey is the push key, made or read once.
func (h *Handler) pushKey(ctx context.Context) (*pushSigner, error) {
	h.keyMu.Lock()
	defer h.keyMu.Unlock()
	if h.key != nil {
		return h.key, nil
	}
	if h.cfg.SecretKey != "" {
		m := hmac.New(sha256.New, []byte(h.cfg.SecretKey))
		m.Write([]byte("agentik a2a push signing key v1"))
		h.key = newSigner(m.Sum(nil))
		return h.key, nil
	}
	kv := h.cfg.KV
	if kv == nil {
		return nil, errors.New("push notifications are not served")
	}
	v, err := kv.Cursor(ctx, pushKeyKV)
	if errors.Is(err, agent.ErrNotFound) {
		seed := make([]byte, ed25519.SeedSize)
		_, _ = rand.Read(seed)
		if err = kv.SetCursor(ctx, pushKeyKV, hex.EncodeToString(seed)); err == nil {
			v, err = kv.Cursor(ctx, pushKeyKV) // what another instance may have written first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("push key: %w", err)
	}
	seed, err := hex.DecodeString(v)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("push key: the stored %s is not a %d-byte hex seed", pushKeyKV, ed25519.SeedSize)
	}
	h.key = newSigner(seed)
	return h.key, nil
}

// handlePushKeys publishes the push key's public half.
func (h *Handler) handlePushKeys(w http.ResponseWriter, r *http.Request) {
	if h.cfg.KV == nil {
		h.restError(w, "", errNoPush())
		return
	}
	k, err := h.pushKey(r.Context())
	if err != nil {
		h.restError(w, "", err)
		return
	}
	w.Header().Set("Cache-Control", "max-age=300")
	writeJSON(w, http.StatusOK, k.jwks())
}
