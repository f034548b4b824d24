// Loaded with `node --import` before the MCP SDK's OAuth example server
// (dist/esm/examples/server/simpleStreamableHttp.js --oauth): it adds what
// the example's demo authorization server leaves out, refresh tokens (its
// exchangeRefreshToken throws "Not implemented for example demo"), with
// rotation. Everything else is the example's own code.
//
// Test controls: SIGUSR1 expires every access token (the MCP server then
// refuses them: the client must refresh); SIGUSR2 also forgets every
// refresh token (the client must sign in again). Lines on stdout, JSON:
// {"event":"token"} when a code is exchanged, {"event":"refreshed"} on a
// refresh, {"event":"expired"} / {"event":"revoked"} once a signal is handled.
import { randomUUID } from 'node:crypto';
import { DemoInMemoryAuthProvider } from '../../../node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/demoInMemoryOAuthProvider.js';
import { InvalidGrantError } from '../../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/auth/errors.js';

const providers = new Set();
const refreshTokens = new Map(); // refresh token → { clientId, scopes, resource }
const say = (event, more = {}) => console.log(JSON.stringify({ event, ...more }));

const exchange = DemoInMemoryAuthProvider.prototype.exchangeAuthorizationCode;
DemoInMemoryAuthProvider.prototype.exchangeAuthorizationCode = async function (client, code, ...rest) {
    providers.add(this);
    const tokens = await exchange.call(this, client, code, ...rest);
    const data = this.tokens.get(tokens.access_token);
    const refresh = randomUUID();
    refreshTokens.set(refresh, { clientId: client.client_id, scopes: data.scopes, resource: data.resource });
    say('token', { resource: String(data.resource ?? '') });
    return { ...tokens, refresh_token: refresh };
};

DemoInMemoryAuthProvider.prototype.exchangeRefreshToken = async function (client, refreshToken, _scopes, resource) {
    const r = refreshTokens.get(refreshToken);
    if (!r || r.clientId !== client.client_id) {
        throw new InvalidGrantError('unknown refresh token');
    }
    refreshTokens.delete(refreshToken); // rotation: each refresh token works once
    const token = randomUUID();
    this.tokens.set(token, { token, clientId: client.client_id, scopes: r.scopes, expiresAt: Date.now() + 3600000, resource: r.resource, type: 'access' });
    const next = randomUUID();
    refreshTokens.set(next, r);
    say('refreshed', { resource: String(resource ?? '') });
    return { access_token: token, token_type: 'bearer', expires_in: 3600, refresh_token: next, scope: r.scopes.join(' ') };
};

// An expired token is still known, with its expiry in the past: the MCP
// server's bearer check then answers 401 "Token has expired" (a token its
// verifier does not know at all makes it answer 500).
const verify = DemoInMemoryAuthProvider.prototype.verifyAccessToken;
DemoInMemoryAuthProvider.prototype.verifyAccessToken = async function (token) {
    const t = this.tokens.get(token);
    if (t?.expired) {
        return { token, clientId: t.clientId, scopes: t.scopes, expiresAt: 1, resource: t.resource };
    }
    return verify.call(this, token);
};
const expireAll = () => {
    for (const p of providers) for (const t of p.tokens.values()) t.expired = true;
};
process.on('SIGUSR1', () => { expireAll(); say('expired'); });
process.on('SIGUSR2', () => { expireAll(); refreshTokens.clear(); say('revoked'); });
