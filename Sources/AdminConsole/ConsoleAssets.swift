/// The operator's console, built into the binary: the page, its style and its script.
public enum ConsoleAssets {
    public static let html: [UInt8] = PackageResources.console_html
    public static let css: [UInt8] = PackageResources.console_css
    public static let javascript: [UInt8] = PackageResources.console_js
}
