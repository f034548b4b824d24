// The management pages (/schedules, /people): server-rendered lists whose
// forms and buttons run the public WebSocket ops; after a change the page's
// list is rendered again by the server (templ owns the markup) and swapped
// in. body[data-page] names the page.
import { Conn } from './conn.js';
import { Schedules } from './schedules.js';
import { People } from './people.js';
import { ProjectsPage } from './projects.js';

const page = document.body.dataset.page;
const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
const conn = new Conn(`${proto}//${location.host}/agentik/ws`, {
  onStatus: (s) => { document.body.dataset.conn = s; },
});
if (page === 'schedules') new Schedules(document, conn);
if (page === 'people') new People(document, conn);
if (page === 'projects') new ProjectsPage(document, conn);
conn.connect();
document.body.dataset.ready = 'true';
