package main

import (
	"net/http"
	"strings"
	"testing"
)

// invite makes a user with email as the admin, as an admin invites
// someone who then signs in with OIDC; it returns their id.
func invite(t *testing.T, o oidcRig, name, email string) string {
	t.Helper()
	var u struct{ ID string }
	must(t, adminKey, "POST", o.p.url("/agentik/users"), `{"name":"`+name+`","email":"`+email+`"}`, &u)
	return u.ID
}

// TestOIDCClaimsFromUserInfo: the provider in its default (conformant)
// configuration puts email and name in its UserInfo answer only; agentik
// reads them there, so the invited kate signs in to her account, as the
// admin AGENTIK_ADMINS names. A verified "\u212Aate@example.com" (KELVIN
// SIGN, which Unicode case folding makes "kate@…") is someone else: a new
// member, never kate's account nor an admin.
func TestOIDCClaimsFromUserInfo(t *testing.T) {
	t.Parallel()
	o := startOIDC(t, "AGENTIK_ADMINS=Kate@Example.com")
	kate := invite(t, o, "Kate", "kate@example.com")
	kelvin := "\u212Aate@example.com"
	if me := oidcSignIn(t, o, kelvin); me.ID == kate || me.Role != "member" || me.Email != kelvin {
		t.Errorf("%s signed in as %+v; want a member of their own (kate is %s)", kelvin, me, kate)
	}
	if me := oidcSignIn(t, o, "kate"); me.ID != kate || me.Role != "admin" || me.Email != "kate@example.com" || me.Name != "Kate" {
		t.Errorf("kate signed in as %+v; want her invited account %s, an admin", me, kate)
	}
	if me := oidcSignIn(t, o, "lou"); me.Email != "lou@example.com" || me.Name != "lou" || me.Role != "member" {
		t.Errorf("lou (open signup) signed in as %+v; want the email and name of the provider's UserInfo", me)
	}
}

// TestOIDCUnverifiedEmail: a provider that knows no email_verified claim
// links no invited account and makes no admin by email; invited, the
// person is refused. With AGENTIK_OIDC_TRUST_UNVERIFIED_EMAIL=on the
// operator trusts the absent claim: the invited account links and
// AGENTIK_ADMINS holds.
func TestOIDCUnverifiedEmail(t *testing.T) {
	t.Parallel()
	o := startOIDC(t, "OIDC_NO_EMAIL_VERIFIED=1", "AGENTIK_ADMINS=boss@example.com,chief@example.com")
	kate := invite(t, o, "Kate", "kate@example.com")
	lee := invite(t, o, "Lee", "lee@example.com")
	if me := oidcSignIn(t, o, "kate"); me.ID == kate || me.Email != "" || me.Role != "member" {
		t.Errorf("kate with an unverified email signed in as %+v; want a new member without the email (kate's account is %s)", me, kate)
	}
	if me := oidcSignIn(t, o, "boss"); me.Role != "member" || me.Email != "" {
		t.Errorf("boss with an unverified email signed in as %+v; want a member", me)
	}

	_ = o.p.cmd.Process.Kill()
	_ = o.p.cmd.Wait()
	o.p = start(t, o.p.addr, o.db, append(o.env, "AGENTIK_OIDC_SIGNUP=invite")...)
	if _, status, page := oidcTry(t, o, "lee"); status != http.StatusForbidden || !strings.Contains(page, "invitation") {
		t.Errorf("lee, invited, with an unverified email: %d %s; want 403 (by invitation)", status, page)
	}

	_ = o.p.cmd.Process.Kill()
	_ = o.p.cmd.Wait()
	o.p = start(t, o.p.addr, o.db, append(o.env, "AGENTIK_OIDC_TRUST_UNVERIFIED_EMAIL=on")...)
	if me := oidcSignIn(t, o, "lee"); me.ID != lee || me.Email != "lee@example.com" {
		t.Errorf("lee with the operator's trust signed in as %+v; want the invited account %s", me, lee)
	}
	if me := oidcSignIn(t, o, "chief"); me.Role != "admin" || me.Email != "chief@example.com" {
		t.Errorf("chief with the operator's trust signed in as %+v; want an admin", me)
	}
}
