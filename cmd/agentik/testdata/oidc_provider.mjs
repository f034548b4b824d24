// A real OpenID provider for the tests: node-oidc-provider (a certified
// implementation) in its default, conformant configuration (the ID token
// of the code flow carries sub only; email, name and groups come from
// the UserInfo endpoint, OIDC Core §5.4) with one confidential client that
// must use PKCE, and its development login (any login, any password).
// A login's email is the login if it has an "@", else LOGIN@example.com,
// verified (with OIDC_NO_EMAIL_VERIFIED=1 the provider knows no
// email_verified claim at all). A login starting with "ops-" is in the
// groups claim's "agentik-admins" (with the profile scope), every login
// in "staff"; with OIDC_GROUPS_FILE, a login that file's JSON object names
// has the groups it lists there (read at each sign-in). Usage:
//   node oidc_provider.mjs PORT REDIRECT_URI
// It prints {"issuer": …} on stdout once it listens.
import Provider from 'oidc-provider';
import { readFileSync } from 'node:fs';

const [port, redirect] = process.argv.slice(2);
const noVerified = process.env.OIDC_NO_EMAIL_VERIFIED === '1';
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [{
    client_id: 'agentik',
    client_secret: 'agentik-secret',
    redirect_uris: [redirect],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  claims: { openid: ['sub'], email: noVerified ? ['email'] : ['email', 'email_verified'], profile: ['name', 'groups'] },
  cookies: { keys: ['test-cookie-key'] },
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        let groups = sub.startsWith('ops-') ? ['staff', 'agentik-admins'] : ['staff'];
        if (process.env.OIDC_GROUPS_FILE) {
          const named = JSON.parse(readFileSync(process.env.OIDC_GROUPS_FILE, 'utf8'));
          if (named[sub]) groups = named[sub];
        }
        const email = sub.includes('@') ? sub : `${sub}@example.com`;
        return noVerified ? { sub, email, name: sub, groups } : { sub, email, email_verified: true, name: sub, groups };
      },
    };
  },
});
provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ issuer }) + '\n');
});
