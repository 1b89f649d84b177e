//! A fetched body as the model reads it: HTML turned into Markdown (headings, links, lists,
//! code, tables; scripts, styles and page chrome left out), other text as it is, and anything
//! binary refused.

/// What a body is, from its `Content-Type` and, without one, its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Binary,
}

/// The kind of a body whose type header says `content_type` (if any).
pub fn kind(content_type: Option<&str>, bytes: &[u8]) -> Kind {
    let essence = content_type.and_then(|t| t.split(';').next()).map(|t| t.trim().to_ascii_lowercase());
    let head = &bytes[..bytes.len().min(1024)];
    match essence.as_deref() {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        // Even a text type is refused when the bytes are not text (a mislabelled download).
        Some(t) if is_text_type(t) => match looks_binary(head) {
            true => Kind::Binary,
            false => Kind::Text,
        },
        Some(t) if !t.is_empty() && t != "application/octet-stream" => Kind::Binary,
        _ if looks_binary(head) => Kind::Binary,
        _ if looks_like_html(head) => Kind::Html,
        _ => Kind::Text,
    }
}

fn is_text_type(t: &str) -> bool {
    t.starts_with("text/")
        || t.ends_with("+json")
        || t.ends_with("+xml")
        || matches!(
            t,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
        )
}

/// NUL bytes, or bytes that are not UTF-8 (a cut at the end of `head` aside).
fn looks_binary(head: &[u8]) -> bool {
    if head.contains(&0) {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        // Only a character cut by the 1 KiB window is forgiven.
        Err(e) => e.error_len().is_some(),
    }
}

fn looks_like_html(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head).trim_start().to_ascii_lowercase();
    text.starts_with("<!doctype html") || text.starts_with("<html")
}

/// Elements whose content is not the page's text.
const SKIPPED: [&str; 11] =
    ["script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head", "form"];

/// HTML as Markdown. The page's `<title>` (left out with `<head>`) comes first as a heading
/// when the body has none of its own.
pub fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder().skip_tags(SKIPPED.to_vec()).build();
    let body = match converter.convert(html) {
        Ok(md) => md,
        // The parser recovers from any markup; this is its I/O type, never expected here.
        Err(_) => return html.to_string(),
    };
    let body = squeeze_blank_lines(body.trim());
    match title(html) {
        Some(title) if !body.starts_with('#') => format!("# {title}\n\n{body}"),
        _ => body,
    }
}

/// The text of the page's `<title>`, if any.
fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let text = htmd::convert(&html[start..end]).ok()?;
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// At most one blank line in a row (layout tables and empty elements leave runs of them).
fn squeeze_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        blank = if line.is_empty() { blank + 1 } else { 0 };
        if blank <= 1 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_with_headings_links_lists_and_code() {
        let html = r#"<!doctype html><html><head><title>Ignored when the body has a heading</title>
            <style>body { color: red }</style><script>alert("x")</script></head>
            <body><h1>Guide</h1><p>See <a href="https://example.com/docs">the docs</a> &amp; more.</p>
            <h2>Steps</h2><ul><li>one</li><li>two <b>bold</b></li></ul><ol><li>first</li></ol>
            <pre><code class="language-rust">fn main() {
    println!("&lt;hi&gt;");
}</code></pre><p>Inline <code>x &lt; y</code>.</p></body></html>"#;
        let md = markdown(html);
        assert!(md.starts_with("# Guide\n"), "{md}");
        assert!(md.contains("## Steps"), "{md}");
        assert!(md.contains("[the docs](https://example.com/docs) & more."), "{md}");
        assert!(md.contains("*   one") && md.contains("two **bold**") && md.contains("1.  first"), "{md}");
        assert!(md.contains("```rust\nfn main() {\n    println!(\"<hi>\");\n}\n```"), "{md}");
        assert!(md.contains("`x < y`"), "{md}");
        assert!(!md.contains("alert") && !md.contains("color: red") && !md.contains("Ignored"), "{md}");
    }

    #[test]
    fn broken_and_bare_markup_still_reads() {
        // Unclosed tags, a stray closing tag, text outside any element: parsed as a browser would.
        let md = markdown("<p>one<p>two</div><ul><li>a<li>b</ul>tail & <i>end");
        assert_eq!(md, "one\n\ntwo\n\n*   a\n*   b\n\ntail & *end*");
        // The title leads when the body has no heading; runs of blank lines are squeezed.
        let md = markdown("<title> My\n Page </title><div><p>x</p><p></p><p></p><div></div><p>y</p></div>");
        assert_eq!(md, "# My Page\n\nx\n\ny");
        assert_eq!(markdown(""), "");
        assert_eq!(markdown("<script>only()</script>"), "");
    }

    #[test]
    fn bodies_are_told_apart_by_type_then_by_their_bytes() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b"<p>x"), Kind::Html);
        assert_eq!(kind(Some("application/xhtml+xml"), b""), Kind::Html);
        assert_eq!(kind(Some("text/plain"), b"plain"), Kind::Text);
        assert_eq!(kind(Some("application/json"), b"{}"), Kind::Text);
        assert_eq!(kind(Some("application/vnd.api+json"), b"{}"), Kind::Text);
        assert_eq!(kind(Some("image/png"), b"\x89PNG"), Kind::Binary);
        assert_eq!(kind(Some("application/pdf"), b"%PDF-1.4"), Kind::Binary);
        assert_eq!(kind(Some("text/plain"), b"MZ\0\0\x90"), Kind::Binary, "a mislabelled binary");
        assert_eq!(kind(None, b"<!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(kind(Some("application/octet-stream"), b"just text"), Kind::Text);
        assert_eq!(kind(None, b"\xff\xfe\xfa binary"), Kind::Binary);
        // A character cut by the sniffing window is still text.
        let mut long = vec![b'a'; 1023];
        long.extend("é".as_bytes());
        assert_eq!(kind(None, &long), Kind::Text);
    }
}
