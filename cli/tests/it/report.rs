//! `vouch bench report`: the page drawn from the suites' saved JSON (`tests/data/report`, the
//! output of a real `vouch bench report --quick` run, so that no test measures anything) and
//! opened in a headless browser, which must render every figure with its data.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every figure and table of the papers the report redraws.
const FIGURES: [&str; 25] = [
    "flexdpdp-fig6",
    "flexdpdp-fig7",
    "flexdpdp-fig8",
    "flexdpdp-fig9",
    "flexdpdp-fig10",
    "flexdpdp-table2",
    "dpdp-fig2a",
    "dpdp-fig2b",
    "dpdp-table3",
    "por-fig5",
    "por-fig6",
    "por-fig7",
    "por-fig8",
    "por-fig9",
    "por-fig10",
    "por-fig11",
    "vicos-fig4",
    "vicos-fig5",
    "vicos-fig6",
    "vicos-fig7",
    "vicos-fig8",
    "iris-fig4",
    "iris-fig5",
    "iris-fig6",
    "iris-fig7",
];

fn saved() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report")
}

fn report(from: &Path, out: &Path) -> Output {
    let args = ["bench", "report", "--from", from.to_str().unwrap(), "--out", out.to_str().unwrap()];
    Command::new(env!("CARGO_BIN_EXE_vouch")).args(args).output().expect("the vouch binary runs")
}

/// The browser `scripts/browser.sh` installs when it is missing (the test command runs it first).
fn browser() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/browser.sh");
    let out = Command::new("bash").arg(script).output().expect("bash runs");
    assert!(out.status.success(), "scripts/browser.sh: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Runs the headless browser on `page` with `args`, within two minutes.
fn headless(page: &Path, profile: &Path, args: &[&str]) -> Output {
    let url = format!("file://{}", page.display());
    let profile = format!("--user-data-dir={}", profile.display());
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-extensions",
        "--hide-scrollbars",
    ];
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser())
        .args(common)
        .arg(profile)
        .args(args)
        .arg(url)
        .output()
        .expect("the browser runs");
    assert!(out.status.success(), "the browser failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The markup of the element `<figure id="ID" ...>...</figure>` in `dom`.
fn figure<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom.find(&format!("<figure id=\"{id}\"")).unwrap_or_else(|| panic!("no figure {id} on the page"));
    let end = dom[start..].find("</figure>").expect("a figure ends") + start;
    &dom[start..end]
}

#[test]
fn the_report_page_renders_every_figure_with_its_data_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let made = report(&saved(), &out);
    let stdout = String::from_utf8_lossy(&made.stdout);
    assert!(made.status.success(), "{stdout}{}", String::from_utf8_lossy(&made.stderr));
    assert!(stdout.contains(&format!("{} figures", FIGURES.len())), "{stdout}");

    // The browser's own parse of the page: each figure is there, with measured values, and
    // its plot is an SVG element holding the drawn data (lines, markers or bars).
    let dom = headless(&out.join("index.html"), &dir.path().join("profile"), &["--dump-dom"]);
    let dom = String::from_utf8(dom.stdout).unwrap();
    assert!(!dom.contains("Left out"), "a figure lacked data");
    for id in FIGURES {
        let markup = figure(&dom, id);
        let values: usize = markup
            .split("data-values=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{id}: no count of values"));
        assert!(values > 0, "{id} plots no measured value");
        assert!(markup.contains("<td>"), "{id}: no table of values");
        let is_table = id.contains("table") || id == "por-fig9";
        if !is_table {
            assert!(markup.contains("<svg"), "{id}: no plot");
            let drawn =
                ["<polyline", "<circle", "<rect", "<path"].iter().map(|e| markup.matches(e).count()).sum::<usize>();
            assert!(drawn > 5, "{id}: the plot draws nothing ({drawn} elements)");
        }
        assert!(out.join(format!("{id}.svg")).exists() != is_table, "{id}: its SVG file");
    }

    // Rendered: a screenshot of the page, which a blank or failed page would leave small.
    let shot = dir.path().join("page.png");
    let arg = format!("--screenshot={}", shot.display());
    headless(&out.join("index.html"), &dir.path().join("profile"), &[&arg, "--window-size=1000,4000"]);
    let png = std::fs::read(&shot).expect("the browser wrote its screenshot");
    assert_eq!(&png[1..4], b"PNG");
    assert!(png.len() > 100_000, "the page rendered as almost nothing: {} bytes", png.len());
}

#[test]
fn a_missing_suite_output_is_named_and_a_renamed_field_leaves_its_figures_out_named() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("data");
    std::fs::create_dir_all(&from).unwrap();
    for entry in std::fs::read_dir(saved()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, from.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::remove_file(from.join("gateway.json")).unwrap();
    let made = report(&from, &dir.path().join("out"));
    let stderr = String::from_utf8_lossy(&made.stderr);
    assert!(!made.status.success());
    assert!(stderr.contains("gateway.json"), "{stderr}");

    // The flexlist suite's builds renamed: the two figures that need them are left out and
    // named, on the page and in the error; the others are drawn.
    std::fs::copy(saved().join("gateway.json"), from.join("gateway.json")).unwrap();
    let flexlist = std::fs::read_to_string(from.join("flexlist.json")).unwrap();
    std::fs::write(from.join("flexlist.json"), flexlist.replace("\"builds\"", "\"built\"")).unwrap();
    let out = dir.path().join("out");
    let made = report(&from, &out);
    let stderr = String::from_utf8_lossy(&made.stderr);
    assert!(!made.status.success(), "a figure left out must fail the command");
    for id in ["flexdpdp-fig6", "flexdpdp-fig7"] {
        assert!(stderr.contains(&format!("left out: {id}: no rows of builds")), "{stderr}");
    }
    assert!(stderr.contains(&format!("{} figures", FIGURES.len() - 2)), "{stderr}");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("Left out for missing data") && page.contains("flexdpdp-fig6: no rows of builds"));
    assert!(!page.contains("<figure id=\"flexdpdp-fig6\"") && page.contains("<figure id=\"flexdpdp-fig8\""));
}
