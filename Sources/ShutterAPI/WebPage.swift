import FoundationEssentials
import ShutterHTTP
import ShutterSystem

/// The web page at `/`: live preview with an overlay, the toolbar (Snap, Delayed, Start/Stop,
/// Library) and the gallery, in one document embedded in the binary.
///
/// No framework and nothing fetched from elsewhere: the page talks to the same JSON API as
/// curl does. Its script and style are inline, so the `Content-Security-Policy` allows exactly
/// those two by their SHA-256 hashes (CSP Level 3, "hash-source") and no other script at all.
enum WebPage {
    /// The document, encoded once.
    static let bytes: [UInt8] = Array(document.utf8)

    /// A strong entity tag: the bytes change only with a new build.
    static let etag = "\"" + SHA256.hexDigest(bytes).prefix(32) + "\""

    /// Only this document's own script and style run; images, fetches and the stream come from
    /// this server (`blob:` for the frame-by-frame preview fallback, `data:` for the empty icon
    /// that stops browsers asking for `/favicon.ico`).
    static let contentSecurityPolicy =
        "default-src 'self'; script-src '\(hashSource(script))'; style-src '\(hashSource(style))'; "
        + "img-src 'self' blob: data:; object-src 'none'; base-uri 'none'; form-action 'none'; "
        + "frame-ancestors 'none'"

    /// Whether the request's `Accept` lists `text/html` with a weight above zero (RFC 9110
    /// §12.5.1), as a browser's navigation does; `*/*` alone (curl) and `application/json` do not.
    static func isWanted(by request: HTTPRequest) -> Bool {
        request.headers.values("Accept").contains { value in
            value.split(separator: ",").contains { element in
                let parts = element.split(separator: ";")
                guard let type = parts.first?.trimmingSpaces(), type.caseInsensitiveEquals("text/html")
                else { return false }
                for parameter in parts.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1)
                    if pair.count == 2, pair[0].trimmingSpaces().caseInsensitiveEquals("q") {
                        return (Double(pair[1].trimmingSpaces()) ?? 0) > 0
                    }
                }
                return true
            }
        }
    }

    /// The page, or `304` when `If-None-Match` names this build's page.
    static func response(_ request: HTTPRequest) -> HTTPResponse {
        // Revalidated on every load (no-cache), so a new daemon's page is never stale; `Vary`
        // because the same URL answers JSON to clients that do not ask for HTML.
        var headers: HTTPHeaders = [
            "ETag": etag,
            "Cache-Control": "no-cache",
            "Vary": "Accept",
        ]
        if let ifNoneMatch = request.headers["If-None-Match"],
            RepresentationValidators.list(ifNoneMatch, matches: etag, weak: true)
        {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        headers.add(name: "Content-Security-Policy", value: contentSecurityPolicy)
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        return HTTPResponse(status: .ok, headers: headers, body: .bytes(bytes))
    }

    /// `sha256-<base64>` of `text` as UTF-8, the form CSP matches an inline element's content against.
    static func hashSource(_ text: String) -> String {
        "sha256-" + Data(SHA256.digest(Array(text.utf8))).base64EncodedString()
    }

    /// The whole document; the style and script are spliced in verbatim, so their hashes match.
    static let document =
        head + "<style>" + style + "</style>\n</head>\n" + body + "<script>" + script
        + "</script>\n</body>\n</html>\n"

    private static let head = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="dark">
        <title>Shutter</title>
        <link rel="icon" href="data:,">

        """#

    private static let body = #"""
        <body>
        <header>
          <h1>Shutter</h1>
          <span id="camera-state" role="status"></span>
        </header>
        <main>
          <section class="camera" aria-label="Camera">
            <div class="stage" id="stage">
              <img id="preview" alt="Live view from the camera">
              <div class="overlay">
                <div class="bar">
                  <time id="clock"></time>
                  <span id="rec" hidden>REC</span>
                  <span id="mode"></span>
                </div>
                <div id="countdown" aria-live="assertive" hidden></div>
                <div id="flash" hidden></div>
              </div>
            </div>
            <div class="toolbar" id="toolbar" role="toolbar" aria-label="Camera controls">
              <button type="button" id="snap">Snap</button>
              <span class="group">
                <button type="button" id="delayed">Delayed</button>
                <label for="delay" class="visually-hidden">Delay in seconds</label>
                <select id="delay">
                  <option value="2">2 s</option>
                  <option value="3" selected>3 s</option>
                  <option value="5">5 s</option>
                  <option value="10">10 s</option>
                </select>
              </span>
              <span class="group">
                <label for="every">every</label>
                <input id="every" type="number" inputmode="decimal" min="0.1" step="any" value="5">
                <span aria-hidden="true">s</span>
                <button type="button" id="startstop" aria-pressed="false">Start</button>
              </span>
              <button type="button" id="library-button">Library</button>
            </div>
          </section>
          <section id="library" aria-labelledby="library-title" tabindex="-1">
            <h2 id="library-title">Library</h2>
            <ul id="gallery"></ul>
            <p id="empty" hidden>No pictures yet: press Snap.</p>
            <div id="more" aria-hidden="true"></div>
          </section>
        </main>
        <dialog id="viewer" aria-labelledby="caption">
          <div class="viewer-body">
            <img id="full" alt="">
            <div class="viewer-bar">
              <span id="caption"></span>
              <span class="actions">
                <a id="download" class="button" download>Download</a>
                <button type="button" id="delete" class="danger">Delete</button>
                <button type="button" id="close">Close</button>
              </span>
            </div>
          </div>
        </dialog>
        <div id="toast" role="alert" hidden></div>

        """#

    /// Dark, with 44-pixel tap targets; one column of controls that wraps on a phone.
    static let style = #"""

        :root { color-scheme: dark; --accent: #ffcc00; --danger: #ff3b30; --panel: #2a2a2a; }
        * { box-sizing: border-box; }
        [hidden] { display: none !important; }
        body { margin: 0; background: #111; color: #eee; font: 16px/1.4 system-ui, sans-serif; }
        header { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem;
          padding: .5rem 1rem; }
        h1 { font-size: 1.2rem; margin: 0; }
        h2 { font-size: 1.1rem; margin: 1rem 0 .5rem; }
        #camera-state { color: #f88; font-size: .9rem; }
        main { max-width: 1100px; margin: 0 auto; padding: 0 .5rem 2rem; }
        .stage { position: relative; background: #000; border-radius: 8px; overflow: hidden;
          aspect-ratio: 16 / 9; max-height: 70vh; margin: 0 auto; }
        #preview { display: block; width: 100%; height: 100%; object-fit: contain; }
        .overlay { position: absolute; inset: 0; pointer-events: none; }
        .bar { position: absolute; top: 0; left: 0; right: 0; display: flex; gap: .75rem;
          justify-content: space-between; padding: .4rem .6rem; font-size: .9rem;
          font-variant-numeric: tabular-nums; text-shadow: 0 1px 2px #000;
          background: linear-gradient(rgba(0, 0, 0, .6), transparent); }
        #rec { color: var(--danger); font-weight: 700; }
        #rec::before { content: ""; display: inline-block; width: .75em; height: .75em;
          margin-right: .3em; border-radius: 50%; background: var(--danger);
          animation: blink 1s steps(2, start) infinite; }
        @keyframes blink { to { visibility: hidden; } }
        #countdown { position: absolute; inset: 0; display: flex; align-items: center;
          justify-content: center; font-size: min(35vw, 10rem); font-weight: 700; color: #fff;
          text-shadow: 0 0 1rem #000; font-variant-numeric: tabular-nums; }
        #flash { position: absolute; inset: 0; background: #fff; animation: flash .25s ease-out forwards; }
        @keyframes flash { from { opacity: .8; } to { opacity: 0; } }
        .toolbar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center;
          justify-content: center; padding: .75rem 0; }
        .group { display: flex; gap: .4rem; align-items: center; }
        button, .button { min-height: 44px; min-width: 44px; padding: .5rem 1rem; border: 0;
          border-radius: 22px; background: var(--panel); color: #fff; font: inherit; font-weight: 600;
          cursor: pointer; text-decoration: none; display: inline-flex; align-items: center;
          justify-content: center; }
        button:disabled { opacity: .4; cursor: default; }
        button:focus-visible, .button:focus-visible, select:focus-visible, input:focus-visible {
          outline: 2px solid var(--accent); outline-offset: 2px; }
        #snap { background: var(--accent); color: #000; min-width: 5.5rem; }
        #startstop { min-width: 5rem; }
        #startstop[aria-pressed="true"], .danger { background: var(--danger); }
        select, input { min-height: 44px; font: inherit; color: #fff; background: #1c1c1c;
          border: 1px solid #444; border-radius: 8px; padding: 0 .5rem; }
        #every { width: 4.5rem; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden;
          clip: rect(0 0 0 0); white-space: nowrap; }
        #gallery { list-style: none; margin: 0; padding: 0; display: grid; gap: 6px;
          grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); }
        .thumb { display: block; width: 100%; padding: 0; border-radius: 6px; overflow: hidden;
          background: #222; }
        .thumb img { display: block; width: 100%; height: auto; }
        #more { height: 1px; }
        #empty { color: #aaa; }
        dialog { padding: 0; border: 0; background: #000; color: #eee; max-width: 100%;
          max-height: 100%; width: min(100%, 1280px); }
        dialog::backdrop { background: rgba(0, 0, 0, .85); }
        #full { display: block; margin: 0 auto; max-width: 100%; max-height: calc(100vh - 8rem);
          width: auto; height: auto; }
        .viewer-bar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center;
          justify-content: space-between; padding: .5rem; }
        .actions { display: flex; flex-wrap: wrap; gap: .5rem; }
        #toast { position: fixed; left: 50%; bottom: 1rem; transform: translateX(-50%); z-index: 10;
          max-width: calc(100vw - 2rem); padding: .75rem 1rem; border-radius: 8px;
          background: #b00020; color: #fff; box-shadow: 0 2px 8px #000; }
        @media (max-width: 480px) {
          main { padding: 0 .25rem 2rem; }
          .toolbar { gap: .4rem; }
          button, .button { padding: .5rem .8rem; }
          #gallery { grid-template-columns: repeat(2, 1fr); }
        }

        """#

    /// The behaviour: API calls, polling while visible, the preview, the gallery and the viewer.
    static let script = #"""

        "use strict";
        const $ = (id) => document.getElementById(id);
        const preview = $("preview"), stage = $("stage"), clock = $("clock"), mode = $("mode");
        const rec = $("rec"), countdown = $("countdown"), flash = $("flash");
        const cameraState = $("camera-state"), toast = $("toast");
        const snapButton = $("snap"), delayedButton = $("delayed"), delaySelect = $("delay");
        const everyInput = $("every"), startStopButton = $("startstop");
        const libraryButton = $("library-button"), library = $("library");
        const gallery = $("gallery"), more = $("more"), empty = $("empty");
        const viewer = $("viewer"), full = $("full"), caption = $("caption");
        const download = $("download"), deleteButton = $("delete"), closeButton = $("close");

        const POLL_MS = 1000;
        const PAGE_SIZE = 36;
        const THUMB_WIDTH = 320;
        // Interval jobs must end (max_job_shots, 10000 by default); a lower limit is read from the refusal.
        const INTERVAL_SHOTS = 10000;
        const INTERVAL_LABEL = "web page";
        const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

        // ---- the API: JSON in, JSON out; an error answer becomes an Error with its sentence.
        class APIError extends Error {
          constructor(status, message) { super(message); this.status = status; }
        }
        async function request(method, path, { body, headers } = {}) {
          const init = { method, headers: { Accept: "application/json", ...headers } };
          if (body !== undefined) {
            init.headers["Content-Type"] = "application/json";
            init.body = JSON.stringify(body);
          }
          let response;
          try {
            response = await fetch(path, init);
          } catch (error) {
            throw new APIError(0, "shutterd is not reachable");
          }
          if (response.status === 204 || response.status === 304) return { response, data: null };
          const data = await response.json().catch(() => null);
          if (!response.ok) {
            const sentence = data && data.error
              ? data.error + (data.detail ? ": " + data.detail : "")
              : `${method} ${path}: HTTP ${response.status}`;
            throw new APIError(response.status, sentence);
          }
          return { response, data };
        }
        const api = async (method, path, body) => (await request(method, path, { body })).data;

        // ---- errors: a toast, never swallowed; a failing poll is reported once until it changes.
        let toastTimer = 0;
        function showError(error) {
          toast.textContent = error && error.message ? error.message : String(error);
          toast.hidden = false;
          clearTimeout(toastTimer);
          toastTimer = setTimeout(() => { toast.hidden = true; }, 6000);
        }
        toast.addEventListener("click", () => { toast.hidden = true; });
        let lastPollError = "";
        function pollFailed(error) {
          if (error.message !== lastPollError) showError(error);
          lastPollError = error.message;
        }

        // ---- the overlay: clock, size and measured fps, the job indicator, the countdown.
        function tickClock() {
          const now = new Date();
          clock.dateTime = now.toISOString();
          clock.textContent = now.toLocaleTimeString();
        }
        tickClock();
        setInterval(tickClock, 1000);

        let lastFrames = null;
        async function pollStatus() {
          const camera = (await api("GET", "/status")).camera;
          const now = performance.now();
          let fps = camera.fps;
          if (lastFrames && now - lastFrames.at > 200 && camera.frames_captured >= lastFrames.count) {
            fps = (camera.frames_captured - lastFrames.count) * 1000 / (now - lastFrames.at);
          }
          lastFrames = { count: camera.frames_captured, at: now };
          mode.textContent = `${camera.width}×${camera.height} · ${fps.toFixed(1)} fps`;
          mode.title = `${camera.name}, asked for ${camera.fps} fps`;
          if (camera.width > 0 && camera.height > 0) stage.style.aspectRatio = `${camera.width} / ${camera.height}`;
          cameraState.textContent = camera.state === "failed" ? `camera: ${camera.failure}`
            : camera.state === "idle" ? "camera idle" : "";
        }

        let intervalJob = null;
        async function pollJobs() {
          const jobs = (await api("GET", "/jobs")).items;
          const active = jobs.filter((job) => job.state === "scheduled" || job.state === "running");
          rec.hidden = active.length === 0;
          rec.title = active.map((job) => `job ${job.id} (${job.kind}, ${job.taken} taken)`).join(", ");
          if (intervalJob) {
            if (!active.some((job) => job.id === intervalJob.id)) setIntervalJob(null);
          } else {
            // A job this page started before a reload (or in another tab) can still be stopped here.
            const ours = active.find((job) => job.kind === "interval" && job.label === INTERVAL_LABEL);
            if (ours) setIntervalJob(ours);
          }
        }

        function showFlash() {
          flash.hidden = true;
          void flash.offsetWidth; // restarts the animation
          flash.hidden = false;
        }
        flash.addEventListener("animationend", () => { flash.hidden = true; });

        // ---- the preview: the MJPEG stream, or frame by frame where multipart is not shown.
        let streaming = false, framesFallback = false, fetchingFrames = false, frameURL = null;
        function startPreview() {
          streaming = true;
          if (framesFallback) fetchFrames();
          else preview.src = "/preview.mjpg";
        }
        function stopPreview() {
          // Closing the stream lets the daemon stop encoding frames nobody sees.
          streaming = false;
          if (!framesFallback) preview.removeAttribute("src");
        }
        preview.addEventListener("error", () => {
          if (!streaming || framesFallback) return;
          framesFallback = true;
          fetchFrames();
        });
        async function fetchFrames() {
          if (fetchingFrames) return;
          fetchingFrames = true;
          try {
            while (streaming && !document.hidden) {
              try {
                const response = await fetch("/preview.jpg?fresh=true", { cache: "no-store" });
                if (!response.ok) throw new APIError(response.status, `preview: HTTP ${response.status}`);
                const url = URL.createObjectURL(await response.blob());
                preview.src = url;
                await preview.decode().catch(() => {});
                if (frameURL) URL.revokeObjectURL(frameURL);
                frameURL = url;
              } catch (error) {
                pollFailed(error);
                await sleep(POLL_MS);
              }
            }
          } finally {
            fetchingFrames = false;
          }
        }

        // ---- the gallery: newest first, pages on scroll, new pictures polled with If-None-Match.
        const tiles = new Map();
        let newestID = 0, nextPage = null, libraryTag = null, loadingMore = false;
        const takenAt = (record) => new Date(record.taken_at).toLocaleString();

        function addRecord(record) {
          if (tiles.has(record.id)) return;
          const item = document.createElement("li");
          item.dataset.id = record.id;
          const button = document.createElement("button");
          button.type = "button";
          button.className = "thumb";
          const image = document.createElement("img");
          image.loading = "lazy";
          image.decoding = "async";
          image.width = THUMB_WIDTH;
          image.height = Math.round(THUMB_WIDTH * record.height / Math.max(1, record.width));
          image.alt = `Picture ${record.id}, taken ${takenAt(record)}`;
          image.src = `${record.url}?width=${THUMB_WIDTH}`;
          button.append(image);
          button.addEventListener("click", () => openViewer(record));
          item.append(button);
          // Newest first: older pages go after the last tile, anything newer before the first
          // tile with a smaller id (at once for a new picture).
          const last = gallery.lastElementChild;
          if (!last || Number(last.dataset.id) > record.id) {
            gallery.append(item);
          } else {
            let before = gallery.firstElementChild;
            while (Number(before.dataset.id) > record.id) before = before.nextElementSibling;
            gallery.insertBefore(item, before);
          }
          tiles.set(record.id, item);
          newestID = Math.max(newestID, record.id);
          empty.hidden = true;
        }
        function removeRecord(id) {
          const item = tiles.get(id);
          if (!item) return;
          item.remove();
          tiles.delete(id);
          empty.hidden = tiles.size > 0 || nextPage !== null;
        }

        async function loadFirstPage() {
          const { response, data } = await request("GET", `/library?limit=${PAGE_SIZE}`);
          libraryTag = response.headers.get("ETag");
          data.items.forEach(addRecord);
          nextPage = data.next;
          empty.hidden = tiles.size > 0 || nextPage !== null;
          loadMoreIfNear();
        }

        async function loadMore() {
          if (!nextPage || loadingMore) return;
          loadingMore = true;
          try {
            const data = await api("GET", nextPage);
            data.items.forEach(addRecord);
            nextPage = data.next;
          } catch (error) {
            showError(error);
            return;
          } finally {
            loadingMore = false;
          }
          loadMoreIfNear();
        }
        function loadMoreIfNear() {
          if (nextPage && more.getBoundingClientRect().top < innerHeight + 600) loadMore();
        }
        new IntersectionObserver((entries) => {
          if (entries.some((entry) => entry.isIntersecting)) loadMore();
        }, { rootMargin: "600px" }).observe(more);

        async function pollLibrary() {
          if (libraryTag === null) return loadFirstPage();
          // One ETag covers every listing and changes only when a picture is added or deleted,
          // so an idle poll is a 304 that never touches the catalog.
          const headers = libraryTag ? { "If-None-Match": libraryTag } : {};
          const { response, data } = await request("GET", `/library?after=${newestID}&limit=500`, { headers });
          if (response.status === 304) return;
          let page = data, added = 0;
          for (;;) {
            page.items.forEach(addRecord);
            added += page.items.length;
            if (!page.next) break;
            page = await api("GET", page.next);
          }
          if (added === 0) await dropDeleted();
          libraryTag = response.headers.get("ETag");
        }
        async function dropDeleted() {
          // Nothing new but the listing changed: pictures were deleted elsewhere (or by retention).
          const loaded = [...tiles.keys()].sort((a, b) => b - a);
          if (loaded.length === 0) return;
          const data = await api("GET", `/library?limit=${Math.min(500, loaded.length)}`);
          const present = new Set(data.items.map((record) => record.id));
          const oldestListed = data.next ? Math.min(...present) : 0;
          for (const id of loaded) if (id >= oldestListed && !present.has(id)) removeRecord(id);
        }

        // ---- the viewer: full size, Download and Delete.
        let viewing = null;
        function openViewer(record) {
          viewing = record;
          full.width = record.width;
          full.height = record.height;
          full.alt = `Picture ${record.id}, taken ${takenAt(record)}`;
          full.src = record.url;
          const job = record.job_id ? ` · job ${record.job_id}` : "";
          caption.textContent = `#${record.id} · ${takenAt(record)} · ${record.width}×${record.height}`
            + ` · ${Math.round(record.bytes / 1024)} KB${job}`;
          download.href = record.url;
          download.download = `shutter-${record.id}.jpg`;
          viewer.showModal();
        }
        closeButton.addEventListener("click", () => viewer.close());
        viewer.addEventListener("click", (event) => { if (event.target === viewer) viewer.close(); });
        viewer.addEventListener("close", () => { full.removeAttribute("src"); viewing = null; });
        deleteButton.addEventListener("click", async () => {
          if (!viewing || !confirm(`Delete picture ${viewing.id}? This cannot be undone.`)) return;
          const id = viewing.id;
          try {
            await api("DELETE", `/library/${id}`);
            removeRecord(id);
            viewer.close();
          } catch (error) {
            if (error.status === 404) {
              removeRecord(id);
              viewer.close();
            }
            showError(error);
          }
        });

        // ---- the toolbar.
        const controls = [snapButton, delayedButton, delaySelect, everyInput, startStopButton, libraryButton];
        function setBusy(busy) {
          for (const control of controls) control.disabled = busy;
          if (!busy) everyInput.disabled = intervalJob !== null;
        }

        snapButton.addEventListener("click", async () => {
          try {
            addRecord(await api("POST", "/snap"));
            showFlash();
          } catch (error) {
            showError(error);
          }
        });

        delayedButton.addEventListener("click", async () => {
          const delay = Number(delaySelect.value);
          const deadline = performance.now() + delay * 1000;
          setBusy(true);
          const show = () => {
            const left = Math.ceil((deadline - performance.now()) / 1000);
            countdown.textContent = String(Math.max(left, 1));
            countdown.hidden = left <= 0;
          };
          show();
          const timer = setInterval(show, 100);
          try {
            // wait=true: the answer is the picture, once taken, so it shows at once.
            addRecord(await api("POST", "/snap", { delay, wait: true }));
            showFlash();
          } catch (error) {
            showError(error);
          } finally {
            clearInterval(timer);
            countdown.hidden = true;
            setBusy(false);
          }
          pollJobs().catch(pollFailed);
        });

        function setIntervalJob(job) {
          intervalJob = job;
          startStopButton.textContent = job ? "Stop" : "Start";
          startStopButton.setAttribute("aria-pressed", job ? "true" : "false");
          everyInput.disabled = job !== null || delayedButton.disabled;
        }
        async function startInterval(every) {
          const spec = { kind: "interval", every, count: INTERVAL_SHOTS, label: INTERVAL_LABEL };
          try {
            return await api("POST", "/jobs", spec);
          } catch (error) {
            const limit = error.status === 400 && /count.* 1 to (\d+)/.exec(error.message);
            if (!limit) throw error;
            return await api("POST", "/jobs", { ...spec, count: Number(limit[1]) });
          }
        }
        startStopButton.addEventListener("click", async () => {
          startStopButton.disabled = true;
          try {
            if (intervalJob) {
              await api("DELETE", `/jobs/${intervalJob.id}`);
              setIntervalJob(null);
            } else {
              // An empty or invalid field is sent as it is, so the daemon's sentence names it.
              setIntervalJob(await startInterval(everyInput.value === "" ? null : Number(everyInput.value)));
            }
          } catch (error) {
            showError(error);
          } finally {
            startStopButton.disabled = delayedButton.disabled;
          }
          pollJobs().catch(pollFailed);
          pollLibrary().catch(pollFailed);
        });

        libraryButton.addEventListener("click", () => {
          library.scrollIntoView({ behavior: "smooth" });
          library.focus({ preventScroll: true });
        });

        // ---- polling, only while the page is visible.
        let polling = false;
        async function pollLoop() {
          if (polling) return;
          polling = true;
          try {
            while (!document.hidden) {
              const results = await Promise.allSettled([pollStatus(), pollJobs(), pollLibrary()]);
              const failure = results.find((result) => result.status === "rejected");
              if (failure) pollFailed(failure.reason);
              else lastPollError = "";
              await sleep(POLL_MS);
            }
          } finally {
            polling = false;
          }
        }
        document.addEventListener("visibilitychange", () => {
          if (document.hidden) {
            stopPreview();
          } else {
            startPreview();
            pollLoop();
          }
        });

        startPreview();
        loadFirstPage().catch(showError).finally(pollLoop);

        """#
}
