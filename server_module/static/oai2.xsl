<?xml version="1.0" encoding="UTF-8"?>
<!-- Renders OAI-PMH 2.0 responses as a readable page for a person who opens the endpoint in a
     browser. Written for this project; XSLT 1.0 so every browser can apply it. -->
<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:oai="http://www.openarchives.org/OAI/2.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    exclude-result-prefixes="oai dc">
  <xsl:output method="html" encoding="UTF-8" indent="yes"/>
  <xsl:variable name="endpoint" select="/oai:OAI-PMH/oai:request"/>

  <xsl:template match="/">
    <html>
      <head>
        <title>OAI-PMH <xsl:value-of select="oai:OAI-PMH/oai:request/@verb"/></title>
        <style>
          body { font-family: sans-serif; margin: 2em; max-width: 70em; }
          table { border-collapse: collapse; width: 100%; }
          td, th { border-bottom: 1px solid #ddd; padding: .3em .6em; text-align: left; }
          .error { color: #a00; } .deleted { color: #888; text-decoration: line-through; }
          nav a { margin-right: 1em; }
        </style>
      </head>
      <body>
        <h1>OAI-PMH: <xsl:value-of select="oai:OAI-PMH/oai:request/@verb"/></h1>
        <nav>
          <a href="?verb=Identify">Identify</a>
          <a href="?verb=ListMetadataFormats">Formats</a>
          <a href="?verb=ListSets">Sets</a>
          <a href="?verb=ListIdentifiers&amp;metadataPrefix=oai_dc">Identifiers</a>
          <a href="?verb=ListRecords&amp;metadataPrefix=oai_dc">Records</a>
        </nav>
        <p>Response date: <xsl:value-of select="oai:OAI-PMH/oai:responseDate"/></p>
        <xsl:apply-templates select="oai:OAI-PMH/*[not(self::oai:responseDate or self::oai:request)]"/>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="oai:error">
    <p class="error">Error <b><xsl:value-of select="@code"/></b>: <xsl:value-of select="."/></p>
  </xsl:template>

  <xsl:template match="oai:Identify">
    <table>
      <xsl:for-each select="*">
        <tr><th><xsl:value-of select="local-name()"/></th><td><xsl:value-of select="."/></td></tr>
      </xsl:for-each>
    </table>
  </xsl:template>

  <xsl:template match="oai:ListMetadataFormats">
    <table>
      <tr><th>prefix</th><th>schema</th><th>namespace</th></tr>
      <xsl:for-each select="oai:metadataFormat">
        <tr><td><xsl:value-of select="oai:metadataPrefix"/></td>
            <td><xsl:value-of select="oai:schema"/></td>
            <td><xsl:value-of select="oai:metadataNamespace"/></td></tr>
      </xsl:for-each>
    </table>
  </xsl:template>

  <xsl:template match="oai:ListSets">
    <table>
      <tr><th>setSpec</th><th>name</th></tr>
      <xsl:for-each select="oai:set">
        <tr><td><a href="?verb=ListIdentifiers&amp;metadataPrefix=oai_dc&amp;set={oai:setSpec}">
              <xsl:value-of select="oai:setSpec"/></a></td>
            <td><xsl:value-of select="oai:setName"/></td></tr>
      </xsl:for-each>
    </table>
  </xsl:template>

  <xsl:template match="oai:ListIdentifiers | oai:ListRecords | oai:GetRecord">
    <table>
      <tr><th>identifier</th><th>datestamp</th><th>sets</th><th>title</th></tr>
      <xsl:for-each select="oai:header | oai:record">
        <xsl:variable name="h" select="self::oai:header | oai:header"/>
        <tr>
          <xsl:if test="$h/@status = 'deleted'"><xsl:attribute name="class">deleted</xsl:attribute></xsl:if>
          <td><a href="{$h/oai:identifier}"><xsl:value-of select="$h/oai:identifier"/></a></td>
          <td><xsl:value-of select="$h/oai:datestamp"/></td>
          <td><xsl:for-each select="$h/oai:setSpec"><xsl:value-of select="."/><xsl:text> </xsl:text></xsl:for-each></td>
          <td><xsl:value-of select="oai:metadata//dc:title"/></td>
        </tr>
      </xsl:for-each>
    </table>
    <xsl:apply-templates select="oai:resumptionToken"/>
  </xsl:template>

  <xsl:template match="oai:resumptionToken">
    <p>
      Shown from item <xsl:value-of select="@cursor + 1"/> of <xsl:value-of select="@completeListSize"/>.
      <xsl:if test="string(.)">
        <a href="?verb={/oai:OAI-PMH/oai:request/@verb}&amp;resumptionToken={.}">Next page</a>
      </xsl:if>
    </p>
  </xsl:template>
</xsl:stylesheet>
