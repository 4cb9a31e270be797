//! The plots of a `gadget bench` report as a reader sees them: a rate sweep of two stores on
//! one plot with the latency bound, open-loop throughput bars marked with their target,
//! latencies in the unit they need, and no text cut off at a plot's edge in a browser.

mod browser;

use std::path::PathBuf;

use assert_cmd::Command;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The figure `id` of the report `html`.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure id=\"{id}\""))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let rest = &html[start..];
    &rest[..rest.find("</figure>").unwrap()]
}

/// The text of every `<text>` element of `svg`.
fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text")
        .skip(1)
        .map(|t| &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()])
        .collect()
}

#[test]
fn a_rate_sweep_of_two_stores_is_one_plot_with_its_bound_and_nothing_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let workload = project_root().join("examples/ycsb/workloada.toml");
    let experiment = dir.path().join("sweep.toml");
    std::fs::write(
        &experiment,
        format!(
            "[experiment]\nseed = 1\nrepetitions = 1\nlimit = 1500\nwarmup = 100\n\
             latency_bound = \"1ms\"\n\
             [[workload]]\nconfig = \"{}\"\nname = \"a-workload-with-a-name-long-enough-to-slant\"\n\
             [[store]]\nkind = \"memory\"\n[[store]]\nkind = \"memory\"\nname = \"memory-too\"\n\
             [[arrival]]\nprocess = \"poisson\"\nrates = [20000, 40000]\n",
            workload.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let done = Command::cargo_bin("gadget")
        .unwrap()
        .arg("bench")
        .arg(&experiment)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let report = out.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();

    // one latency–throughput plot: both stores' lines, each in its colour, and the bound
    assert_eq!(html.matches("<figure id=\"capacity-").count(), 1, "{html}");
    let sweep = figure(&html, "capacity-0");
    for (k, store) in ["memory", "memory-too"].iter().enumerate() {
        let colour = gadget::palette::hex(k);
        assert!(
            sweep.contains(&format!("stroke=\"{colour}\" stroke-width=\"2\"")),
            "no {store} line in {sweep}"
        );
        assert!(
            texts(sweep).contains(store),
            "{store} is not in the legend: {sweep}"
        );
    }
    assert!(texts(sweep).contains(&"bound 1 ms"), "{sweep}");

    // open-loop bars say what they show
    let throughput = figure(&html, "throughput");
    for target in ["target 20K", "target 40K"] {
        assert!(texts(throughput).contains(&target), "{throughput}");
    }
    assert!(throughput.contains("not what it could do"), "{throughput}");

    // latency axes in units, never 1K µs
    for id in ["p999", "spectrum-0", "capacity-0"] {
        let ticks = texts(figure(&html, id));
        assert!(
            ticks
                .iter()
                .any(|t| t.ends_with(" µs") || t.ends_with(" ms")),
            "{id}: {ticks:?}"
        );
    }
    for id in ["p999", "spectrum-0"] {
        let ticks = texts(figure(&html, id));
        assert!(!ticks.iter().any(|t| t.ends_with('K')), "{id}: {ticks:?}");
    }
    assert!(!html.contains("latency, µs"), "a unit in an axis label");

    // in a browser, every text of every plot lies inside its plot
    let Some(browser) = browser::chromium() else {
        return;
    };
    let checked = dir.path().join("checked.html");
    std::fs::write(
        &checked,
        html.replace(
            "</body>",
            "<script>window.addEventListener('load',function(){var out=[];\
             document.querySelectorAll('figure svg').forEach(function(svg){\
             var r=svg.getBoundingClientRect();svg.querySelectorAll('text').forEach(function(t){\
             var b=t.getBoundingClientRect();if(b.left<r.left-0.5||b.right>r.right+0.5||\
             b.top<r.top-0.5||b.bottom>r.bottom+0.5)out.push(t.textContent);});});\
             document.body.setAttribute('data-cut-off',out.join('|'));});</script></body>",
        ),
    )
    .unwrap();
    let (dom, stderr) = browser::rendered(browser, &checked, dir.path());
    assert!(
        dom.contains("data-cut-off=\"\""),
        "text cut off at a plot's edge: {}; stderr: {stderr}",
        dom.split("data-cut-off=\"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .unwrap_or("no check ran")
    );
}
