// Follow mode of the transcript: the newest content stays in view while a turn streams, until
// the reader scrolls up. Only the reader's own gestures leave it (the wheel, the keys, a drag of
// the scrollbar): a scroll event alone says nothing about who scrolled, and a resize of the
// sidebar, a card that shrinks (an answered permission) or content reflowing at a new width
// all move `scrollTop` too. While following, a ResizeObserver keeps the bottom pinned when the
// view's size changes; reaching the bottom, by any means, follows again.

/** Which way a key scrolls the focused transcript, if it scrolls it. */
export function keyScrolls(key: string, shiftKey: boolean): "up" | "down" | null {
  if (key === "ArrowUp" || key === "PageUp" || key === "Home" || (key === " " && shiftKey)) return "up";
  if (key === "ArrowDown" || key === "PageDown" || key === "End" || key === " ") return "down";
  return null;
}

/** Whether a pointer press at `offsetX` in a box whose content is `clientWidth` wide is on its vertical scrollbar. */
export function onScrollbar(offsetX: number, clientWidth: number, offsetWidth: number): boolean {
  return offsetWidth > clientWidth && offsetX >= clientWidth;
}

export interface FollowMode {
  /** Whether the newest content is kept in view. */
  readonly following: boolean;
  /** Follows again, scrolled to the bottom now (Jump to latest, a message sent). */
  follow(): void;
  /** After the content changed: to the bottom if following; Jump to latest shown or not. */
  contentChanged(): void;
}

export function followMode(box: HTMLElement, jumpBtn: HTMLButtonElement): FollowMode {
  let following = true;
  /** The scrollbar is held by the pointer: the reader drives, nothing pins. */
  let dragging = false;

  const atBottom = () => box.scrollHeight - box.scrollTop - box.clientHeight < 30;
  const updateJump = () => (jumpBtn.hidden = following || atBottom());

  function pin(): void {
    if (following) box.scrollTop = box.scrollHeight;
    updateJump();
  }

  /** The reader scrolled up: stay where they put the view. */
  function leave(): void {
    if (box.scrollTop <= 0) return; // nothing above: the gesture moved nothing
    following = false;
    updateJump();
  }

  /** Whether an element between `target` and the transcript scrolls up itself (a long code block, a command's output). */
  function innerScrollsUp(target: EventTarget | null): boolean {
    for (let el = target instanceof Element ? target : null; el && el !== box; el = el.parentElement) {
      if (el.scrollTop > 0 && el.scrollHeight > el.clientHeight && /auto|scroll/.test(getComputedStyle(el).overflowY)) return true;
    }
    return false;
  }

  box.addEventListener("wheel", (e) => {
    if (e.deltaY < 0 && !innerScrollsUp(e.target)) leave();
  }, { passive: true });
  box.addEventListener("keydown", (e) => {
    // Keys scroll the transcript when it has the focus itself (a focused button takes them).
    if ((e.target === box || e.key === "PageUp") && keyScrolls(e.key, e.shiftKey) === "up") leave();
  });
  box.addEventListener("pointerdown", (e) => {
    // A press on the scrollbar targets the box itself (offsetX is then relative to it).
    if (e.target !== box || !onScrollbar(e.offsetX, box.clientWidth, box.offsetWidth)) return;
    dragging = true;
    following = false;
  });
  window.addEventListener("pointerup", () => {
    if (!dragging) return;
    dragging = false;
    following = atBottom();
    updateJump();
  });
  box.addEventListener("scroll", () => {
    // Not the reader's doing while following (their gestures left follow mode first): the
    // geometry changed under the view, so it goes back to the bottom.
    if (following) pin();
    else if (!dragging && atBottom()) following = true;
    updateJump();
  });
  // The sidebar resized (or the panel): the content reflowed at the new size; keep the bottom.
  new ResizeObserver(() => pin()).observe(box);
  jumpBtn.addEventListener("click", () => {
    following = true;
    pin();
  });

  return {
    get following() {
      return following;
    },
    follow() {
      following = true;
      pin();
    },
    contentChanged: pin,
  };
}
