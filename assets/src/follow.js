// Follower keeps a scrolling thread on its latest content while the user is
// at the bottom, and leaves it alone once they scroll up to read: the view
// never jumps by itself. It follows size changes of the content (streamed
// text, a stored answer replacing the live one, late-rendered markdown,
// images), not individual events, so no renderer has to remember to scroll.
// A "jump to latest" button shows while the user is away from the bottom.

const SLACK = 64; // px from the bottom that still count as "at the bottom"

export class Follower {
  constructor(scroller, content, button) {
    this.scroller = scroller;
    this.button = button;
    this.following = true;
    this.lastTop = scroller.scrollTop;
    this.onScroll = () => this.scrolled();
    scroller.addEventListener('scroll', this.onScroll, { passive: true });
    // Resizes are reported after layout and before paint: the view is
    // moved before the user sees the content grow below it.
    this.observer = new ResizeObserver(() => this.stick());
    this.observer.observe(content);
    this.observer.observe(scroller);
    button?.addEventListener('click', () => this.jump());
  }

  gap() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight;
  }

  // scrolled tells a scroll up by the user from our own scrolling and from
  // the browser's (clamping when content shrinks, scroll anchoring): only
  // the user moves the view up while it is away from the bottom.
  scrolled() {
    const top = this.scroller.scrollTop;
    if (this.gap() < SLACK) this.following = true;
    else if (top < this.lastTop - 1) this.following = false;
    this.lastTop = top;
    this.show();
  }

  // stick scrolls to the bottom if the view follows.
  stick() {
    if (this.following) this.toBottom();
    else this.show();
  }

  toBottom() {
    const s = this.scroller;
    s.scrollTop = s.scrollHeight;
    this.lastTop = s.scrollTop;
    this.show();
  }

  // jump goes to the latest content and follows it again.
  jump() {
    this.following = true;
    this.toBottom();
  }

  // release stops following: something above the bottom is being shown.
  release() {
    this.following = false;
    this.show();
  }

  show() {
    if (this.button) this.button.hidden = this.following || this.gap() < SLACK;
  }

  dispose() {
    this.observer.disconnect();
    this.scroller.removeEventListener('scroll', this.onScroll);
  }
}
