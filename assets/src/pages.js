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
let view = null;
const conn = new Conn(`${proto}//${location.host}/agentik/ws`, {
  onStatus: (s) => { document.body.dataset.conn = s; },
  onOpen: () => view?.onOpen?.(),
});
if (page === 'schedules') view = new Schedules(document, conn);
if (page === 'people') view = new People(document, conn);
if (page === 'projects') view = new ProjectsPage(document, conn);
conn.connect();
document.body.dataset.ready = 'true';
