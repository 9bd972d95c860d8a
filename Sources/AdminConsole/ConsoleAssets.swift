/// The operator's console (GET /admin and its two files), compiled into the binary so the
/// gateway serves it without reading files at run time and a deployment cannot lose them.
package enum ConsoleAssets {
    /// The page, with `{{LANG}}` and `{{DIR}}` still in it: the server fills them per request.
    package static let html: [UInt8] = PackageResources.console_html
    package static let css: [UInt8] = PackageResources.console_css
    package static let javascript: [UInt8] = PackageResources.console_js
}
