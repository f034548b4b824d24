// A real OpenID provider for the tests: node-oidc-provider (a certified
// implementation) with one confidential client that must use PKCE, and
// its development login (any login, any password). A login starting
// with "ops-" is in the groups claim's "agentik-admins" (with the profile
// scope), every login in "staff". Usage:
//   node oidc_provider.mjs PORT REDIRECT_URI
// It prints {"issuer": …} on stdout once it listens.
import Provider from 'oidc-provider';

const [port, redirect] = process.argv.slice(2);
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
  conformIdTokenClaims: false, // email and name in the ID token itself
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
  cookies: { keys: ['test-cookie-key'] },
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        const groups = sub.startsWith('ops-') ? ['staff', 'agentik-admins'] : ['staff'];
        return { sub, email: `${sub}@example.com`, email_verified: true, name: sub, groups };
      },
    };
  },
});
provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ issuer }) + '\n');
});
