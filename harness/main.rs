use anyhow::Result;
fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("cell") => shmbench::cell::main(&args[2]),
        Some("worker") => {
            let id: u32 = args[2].parse()?;
            let cfg = serde_json::from_str(&args[3])?;
            std::process::exit(shmbench::loader::worker::run(id, &cfg)?);
        }
        _ => Ok(()),
    }
}
