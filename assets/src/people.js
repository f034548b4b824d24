// The people page (web/people.templ): filled in by the user-management
// slice.
export class People {
  constructor(doc, conn) {
    this.conn = conn;
  }
}
